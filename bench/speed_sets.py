"""What rotating buffer sets does to the speed figure of ops that touch their big buffers only in part
(embedding, qk_norm_rope_kv, qk_norm_rope_prefill, gather_row): each decode case and the largest case of each variant timed
twice in one process, with one buffer set (the same rows of the table, cache and RoPE tables every
launch: L2-warm) and with the rotation conformance/speed.py uses (the big buffers shared, index params
drawn afresh per set, sets past twice the L2). Output saved as bench/results/speed_sets.txt.

    python3 bench/speed_sets.py [OP ...]
"""
from __future__ import annotations

import datetime
import sys

from kreg.checker.ptx.compile import compile_cuda
from kreg.conformance.harness import open_harness
from kreg.conformance.speed import copy_bandwidth, time_case
from kreg.registry.catalog import load_catalog

OPS = ("embedding", "qk_norm_rope_kv", "qk_norm_rope_prefill", "gather_row")


def main(ops):
    dev = open_harness("gpu")
    cat = load_catalog()
    bw = copy_bandwidth(dev)
    print(f"# {dev.describe()}  {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC  copy {bw / 1e12:.2f} TB/s")
    print(f"{'variant':32s} {'case':22s} {'1 set us':>9s} {'%copy':>6s} {'rotated us':>10s} {'%copy':>6s} "
          f"{'sets':>6s} {'rot/1':>6s}")
    for e in cat.kernels:
        v = e.variant
        if v.op not in ops:
            continue
        op = cat.ops[v.op]
        module = dev.load(compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx)
        biggest = max(op.cases, key=lambda n: op.traffic_bytes(op.cases[n], v.types))
        for name, dims in op.cases.items():
            if "decode" not in name and name != biggest:     # the decode cases and the largest one
                continue
            try:
                one = time_case(dev, module, v, op, dims, bw, arena_bytes=1)
                rot = time_case(dev, module, v, op, dims, bw)
            except Exception as ex:      # a case this variant cannot take (its own requirements)
                print(f"{v.name:32s} {name:22s} not timed: {type(ex).__name__}: {str(ex)[:80]}")
                continue
            print(f"{v.name:32s} {name:22s} {one['median_us']:9.2f} {one['pct_of_copy_bw']:6.1f} "
                  f"{rot['median_us']:10.2f} {rot['pct_of_copy_bw']:6.1f} {rot['buffer_sets']:6d} "
                  f"{rot['median_us'] / one['median_us']:6.2f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or OPS)
