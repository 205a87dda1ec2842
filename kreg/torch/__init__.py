"""kreg's verified kernels as PyTorch ops (the `torch` extra: pip install 'kreg[torch]').

    import kreg.torch as kt
    y = kt.rms_norm(x, weight, 1e-6)         # also add_rms_norm, silu_mul, linear, embedding, argmax,
                                             # attention_prefill, attention_decode, qk_norm_rope_kv, ...
    kt.explain()                             # which variant, PTX sha256, checker version, verdict served each op
    kt.use_lock("kreg.lock")                 # exactly the artifacts `kreg lock` pinned, nothing else

Every registry op is also `torch.ops.kreg.<op>` (a torch custom op with a fake implementation: it
traces under torch.compile and records into CUDA graphs). A call checks its tensors against the op's
contract (ContractError: nothing launched), resolves the variant for its dtype, device and dims from
the profile in use (`safe-only` by default) or the lock, and launches exactly the PTX that was verified
(by sha256) on torch's current stream; on CPU tensors the same PTX runs in kreg's emulator. No variant
that qualifies: NoVariantError naming the op, why, and the `kreg verify` to run; never a fallback."""
from .errors import ContractError, KregTorchError, NoVariantError
from .library import OPS, register_all
from .variants import explain, use_lock, use_profile

register_all()

from .ops import (add_rms_norm, argmax, attention_decode, attention_prefill, embedding, linear,  # noqa: E402
                  qk_norm_rope_kv, qk_norm_rope_prefill, rms_norm, silu_mul)

__all__ = ["ContractError", "KregTorchError", "NoVariantError", "OPS", "explain", "use_lock", "use_profile",
           "add_rms_norm", "argmax", "attention_decode", "attention_prefill", "embedding", "linear",
           "qk_norm_rope_kv", "qk_norm_rope_prefill", "rms_norm", "silu_mul"]
