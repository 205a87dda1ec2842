"""How many splits (P) a flash-decoding launch uses: the attention_decode op leaves P to the caller, and
the engine picks it once, when it captures the decode graph, from the cache length it allows (n_max),
the KV heads and the GPU's SM count. The named cases of attention_decode / attention_merge use it with
the H100's 132 SMs, so the conformance cases and the speed figures are the shapes the engine launches."""
from __future__ import annotations

H100_SMS = 132
BLOCKS_PER_SM = 4       # attention_decode blocks (128 threads) resident per SM: loads in flight on every SM
MIN_CHUNK = 64          # fewer positions per split would not pay for its share of the merge
MAX_SPLITS = 1024       # the op's range of P


def choose_splits(n_max: int, hkv: int, sm_count: int = H100_SMS) -> int:
    """P for caches of up to n_max positions: one wave of BLOCKS_PER_SM blocks per SM over the (P, Hkv)
    grid, but no split shorter than MIN_CHUNK positions at n = n_max (short caches use fewer splits)."""
    if n_max < 1 or hkv < 1 or sm_count < 1:
        raise ValueError(f"choose_splits needs positive arguments, got {n_max}, {hkv}, {sm_count}")
    fill = -(-BLOCKS_PER_SM * sm_count // hkv)
    return max(1, min(MAX_SPLITS, fill, -(-n_max // MIN_CHUNK)))
