"""What can go wrong between PTX text and a finished launch."""


class LoadError(RuntimeError):
    """The PTX cannot be loaded on this device (parse error, driver too old, wrong bytes)."""


class ShaMismatch(LoadError):
    """The PTX bytes are not the ones the caller (a proof) names."""


class KernelNotFound(LookupError):
    """No such entry in the module; the message names the entries there are."""


class ArgError(TypeError):
    """An argument does not fit its PTX param."""


class LaunchError(RuntimeError):
    """The launch failed: the emulator stopped it, or the driver refused or faulted. `kind` says which
    (the emulator's kind, e.g. "out-of-bounds", "step-limit"; "launch" or "fault" on the GPU)."""

    def __init__(self, kind: str, message: str):
        self.kind = kind
        super().__init__(message)
