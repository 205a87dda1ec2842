"""kreg's PTX emulator: the CPU device. `machine` runs a launch; alu / memory / sync / tensor / wgmma hold
the instruction handlers, fpround the exactly rounded float arithmetic they use."""
