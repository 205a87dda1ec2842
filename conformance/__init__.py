"""Conformance: float64 references, input generation, numerics and anti-cheat checks, timing."""
