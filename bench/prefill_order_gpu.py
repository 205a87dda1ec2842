"""attention_prefill_tc's row-tile order on the GPU: the registered variant compiled as registered and with
each -D option given, timed by the conformance timing on the Qwen3 heads at T = 2048 and 8192 (start 0) beside
torch SDPA (flash), in one process. Writes the table to the path given.

    python3 bench/prefill_order_gpu.py RESULTS.txt VARIANT -DKREG_LONGEST_FIRST=1 ...
"""
from __future__ import annotations

import dataclasses
import datetime
import sys

from kreg.checker.ptx.compile import compile_cuda
from kreg.conformance.devices import open_device
from kreg.conformance.speed import copy_bandwidth, time_case
from kreg.registry.catalog import load_catalog

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from attention_prefill_gpu import sdpa_us  # noqa: E402

SHAPES = {"qwen3-4b-t2048": {"T": 2048, "Hq": 32, "Hkv": 8, "S": 2048, "start": 0},
          "qwen3-4b-t8192": {"T": 8192, "Hq": 32, "Hkv": 8, "S": 8192, "start": 0},
          "qwen3-0.6b-t2048": {"T": 2048, "Hq": 16, "Hkv": 8, "S": 2048, "start": 0},
          "qwen3-32b-t8192": {"T": 8192, "Hq": 64, "Hkv": 8, "S": 8192, "start": 0}}


def main():
    out_path, name, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    import torch
    dev = open_device("gpu")
    cat = load_catalog()
    v0 = next(e.variant for e in cat.kernels if e.variant.name == name)
    op = cat.ops[v0.op]
    bw = copy_bandwidth(dev)
    builds = {"as registered": v0}
    for d in extra:
        builds[d] = dataclasses.replace(v0, options=tuple(v0.options) + (d,))
    mods = {k: dev.load(compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx)
            for k, v in builds.items()}
    tdt = {"bf16": torch.bfloat16, "f16": torch.float16}[v0.types["DT"]]
    lines = []

    def say(s):
        print(s, flush=True)
        lines.append(s)
    say(f"# {name} builds: {dev.describe()}  {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC")
    for case, dims in SHAPES.items():
        ref, _ = sdpa_us(torch, dims, tdt)
        row = f"{case:18s} SDPA {ref:9.1f} us"
        for k, v in builds.items():
            t = time_case(dev, mods[k], v, op, dims, bw)["median_us"]
            row += f" | {k}: {t:9.1f} us x SDPA {t / ref:5.2f}"
        say(row)
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
