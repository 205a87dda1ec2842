"""The reference Qwen3 engine: a Hugging Face Qwen3 model run with the registry's verified kernels,
chosen by a profile from the results store (safe-only / fastest) and loaded as the exact PTX that was
verified. `run()` is the Python API of `kreg run`; Engine the lower-level object."""
from .api import run
from .engine import Engine, Generation
from .errors import EngineError
from .sampling import Sampling

__all__ = ["run", "Engine", "Generation", "EngineError", "Sampling"]
