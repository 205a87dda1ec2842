"""The symbolic prover: symbolic execution of PTX for two arbitrary threads (symbolic, semantics, loops,
env), its integer translation (intabs), the four properties' queries and decisions (prove) and the replay
of a counterexample in the emulator (witness)."""
