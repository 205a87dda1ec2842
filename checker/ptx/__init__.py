"""The PTX front end: CUDA C++ -> PTX through pinned NVRTC (compile, cache), the PTX parser and its
control-flow graph, toolchain hazards, the PDL check, and binding an op's dims to a launch."""
