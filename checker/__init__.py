"""The checker: NVRTC compile, the PTX front end, the symbolic prover and the PTX emulator (the CPU device)."""
