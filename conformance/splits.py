"""How many splits (P) a flash-decoding launch uses: the attention_decode op leaves P to the caller, and
the engine picks it once, when it captures the decode graph, from the cache length it allows (n_max),
the query and KV heads and the GPU's SM count. The named cases of attention_decode / attention_merge use
it with the H100's 132 SMs, so the conformance cases and the speed figures are the shapes the engine
launches. The grid of a decode launch is (cdiv(Hq / Hkv, HEADS_PER_BLOCK), P, Hkv); P is the most splits
that still fit in one wave of BLOCKS_PER_SM blocks per SM (a second, partial wave costs more than the
longer splits of one), but no more than one split per MIN_CHUNK positions of n_max. The engine's P is
fixed for every n <= n_max: a short cache gets short splits (each block one iteration of its loop, one
memory round trip), which is what keeps a decode step's small-n attention latency-bound, not slow."""
from __future__ import annotations

H100_SMS = 132
HEADS_PER_BLOCK = 4     # query heads of one KV head a decode block computes (the grid's x dim covers G)
BLOCKS_PER_SM = 2       # decode blocks (128 threads) per SM in the wave: the safe kernel's 199 registers fit 2; P = 33
                        # for 8 KV heads was the fastest from 640 to 32768 positions on the H100, also for the
                        # cp.async kernels that fit 4 (bench/results/attention_decode_sweep.txt)
MIN_CHUNK = 32          # positions one decode block takes per loop iteration (8 half-warps x 4)
MAX_SPLITS = 1024       # the op's range of P


def choose_splits(n_max: int, hkv: int, sm_count: int = H100_SMS, hq: int | None = None) -> int:
    """P for caches of up to n_max positions with hkv KV heads (and hq query heads; None: at most
    HEADS_PER_BLOCK per KV head): one wave of BLOCKS_PER_SM blocks per SM over the grid, at most one
    split per MIN_CHUNK positions of n_max."""
    if n_max < 1 or hkv < 1 or sm_count < 1 or (hq is not None and (hq < hkv or hq % hkv)):
        raise ValueError(f"choose_splits needs positive arguments (hq a multiple of hkv), got "
                         f"{n_max}, {hkv}, {sm_count}, {hq}")
    batches = -(-(hq // hkv) // HEADS_PER_BLOCK) if hq is not None else 1
    wave = BLOCKS_PER_SM * sm_count // (hkv * batches)
    return max(1, min(MAX_SPLITS, wave, -(-n_max // MIN_CHUNK)))
