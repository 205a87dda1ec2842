"""Launches for Nsight Compute (bench/dev_decode_ncu.sh): the decode kernels of the attention_decode_tc_dev
candidates at n = 8192 (Qwen3-4B heads, bf16, P = choose_splits), each three times over K/V copies past the
L2, so that `ncu --kernel-name attention_decode_bf16` profiles them in the order printed.

    python3 bench/attention_decode_ncu.py LABEL...
"""
import math
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from attention_decode_dev import bound, runner  # noqa: E402
from attention_decode_gpu import HKV, D  # noqa: E402
from attention_decode_tc_dev import CANDIDATES  # noqa: E402

from kreg.checker.compile import compile_cuda  # noqa: E402
from kreg.conformance.devices import open_device  # noqa: E402
from kreg.conformance.splits import choose_splits  # noqa: E402
from kreg.registry.catalog import load_catalog  # noqa: E402

HQ, N = 32, 8192


def main(labels) -> None:
    import torch
    dev = open_device("gpu")
    cat = load_catalog()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    dec_v = next(e.variant for e in cat.entries if e.op == "attention_decode" and e.variant.safety == "safe"
                 and e.variant.types["DT"] == "bf16")
    nsets = max(1, math.ceil(2 * dev.l2_bytes / (2 * N * HKV * D * 2)))
    g = torch.Generator(device="cuda").manual_seed(0)
    rnd = lambda *shape: torch.randn(*shape, device="cuda", dtype=torch.bfloat16, generator=g)  # noqa: E731
    P = choose_splits(N, HKV, sms, HQ)
    bufs = {"q": rnd(HQ, D), "k_cache": [rnd(N, HKV, D) for _ in range(nsets)],
            "v_cache": [rnd(N, HKV, D) for _ in range(nsets)], "n": torch.tensor([N], device="cuda", dtype=torch.int32),
            "o_part": torch.empty(P, HQ, D, device="cuda"), "lse_part": torch.empty(P, HQ, device="cuda")}
    extra = {"rs-floor": ("kernels/safe/attention_decode/attention_decode_rs.cu", ("-DKREG_FLOOR=1",))}
    cands = {lb: (src, opts) for lb, src, opts, *_ in CANDIDATES} | extra
    for lb in labels:
        src, opts = cands[lb]
        mod = dev.load(compile_cuda((ROOT / src).read_text(), pathlib.Path(src).name, list(opts)).ptx)
        launches = bound(dev, cat, dec_v, "attention_decode", mod, {"Hq": HQ, "Hkv": HKV, "S": N, "P": P}, bufs,
                         ("q", "k_cache", "v_cache", "n", "o_part", "lse_part"), nsets, False, gridx=1)
        run = runner(launches)
        for i in range(3):
            run(i)
        torch.cuda.synchronize()
        print(f"{lb}: 3 launches (P = {P}, {nsets} K/V copies)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
