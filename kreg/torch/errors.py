"""The errors kreg.torch raises: a call that breaks its op's contract (never launched), and an op with
no verified variant to run (never a fallback to another implementation)."""


class KregTorchError(RuntimeError):
    pass


class ContractError(KregTorchError, ValueError):
    """The tensors do not meet the op's contract (shape, dtype, layout, alignment, aliasing, index range)."""


class NoVariantError(KregTorchError):
    """No variant qualifies for this op, type binding and device under the profile or lock in use; the
    message names the op, why, and the `kreg verify` (or `kreg lock`) to run."""
