"""kreg: a verified-kernel registry and conformance suite for GPU kernels."""
__version__ = "0.1.0"
