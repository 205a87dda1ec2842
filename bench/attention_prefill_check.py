"""GPU numerics of the registry's attention_prefill variants at full size against torch (causal SDPA in
fp32 on the same bf16 / f16 values, GQA by repeating the KV heads): Qwen3-4B heads (Hq 32, Hkv 8) at
T = 2048 from position 0, and a chunk of T = 700 after a cached prefix of 1350 positions (the mask then
lets query t see keys 0 .. start + t). Prints max |out - reference| and the share of elements outside the
op's tolerance, per variant; writes the same text to the path given.

    python3 bench/attention_prefill_check.py OUT.txt [bf16|f16] [variant-name-substring]
"""
from __future__ import annotations

import sys

from kreg.checker.ptx.bind import bind
from kreg.checker.ptx.compile import compile_cuda
from kreg.conformance.harness import config, open_harness, ptx_module
from kreg.registry.catalog import load_catalog

SHAPES = [{"T": 2048, "Hq": 32, "Hkv": 8, "S": 2048, "start": 0},
          {"T": 700, "Hq": 32, "Hkv": 8, "S": 2100, "start": 1350}]


def reference(torch, q, k, v, start):
    """out [T, Hq, 128] in fp32: softmax(scale q k^T + causal mask with offset) v."""
    T, Hq, _ = q.shape
    n = start + T
    G = Hq // k.shape[1]
    qf = q.float().permute(1, 0, 2)                                   # [Hq, T, 128]
    kf = k[:n].float().repeat_interleave(G, 1).permute(1, 0, 2)       # [Hq, n, 128]
    vf = v[:n].float().repeat_interleave(G, 1).permute(1, 0, 2)
    mask = torch.arange(n, device=q.device)[None, :] <= (start + torch.arange(T, device=q.device))[:, None]
    o = torch.nn.functional.scaled_dot_product_attention(qf, kf, vf, attn_mask=mask)
    return o.permute(1, 0, 2)


def main():
    import torch
    path = sys.argv[1]
    dt = sys.argv[2] if len(sys.argv) > 2 else "bf16"
    only = sys.argv[3] if len(sys.argv) > 3 else ""
    tdt = {"bf16": torch.bfloat16, "f16": torch.float16}[dt]
    dev = open_harness("gpu")
    cat = load_catalog()
    op = cat.ops["attention_prefill"]
    tol = op.tolerance[dt]
    lines = []
    for e in cat.entries:
        v = e.variant
        if e.op != "attention_prefill" or v.types["DT"] != dt or only not in e.name:
            continue
        m = dev.load(compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx)
        for dims in SHAPES:
            g = torch.Generator(device="cuda").manual_seed(1)
            q = torch.randn(dims["T"], dims["Hq"], 128, device="cuda", dtype=tdt, generator=g)
            k = torch.randn(dims["S"], dims["Hkv"], 128, device="cuda", dtype=tdt, generator=g)
            vv = torch.randn(dims["S"], dims["Hkv"], 128, device="cuda", dtype=tdt, generator=g)
            out = torch.full_like(q, float("nan"))
            ptrs = {"q": q.data_ptr(), "k_cache": k.data_ptr(), "v_cache": vv.data_ptr(), "out": out.data_ptr()}
            for bl in bind(v, op, ptx_module(dev, m), dims, ptrs):
                m.kernel(bl.entry).launch(config(bl), *bl.args)
            torch.cuda.synchronize()
            want = reference(torch, q, k, vv, dims["start"])
            err = (out.float() - want).abs()
            bad = (err > tol["atol"] + tol["rtol"] * want.abs()).float().mean().item()
            s = (f"{e.name:32s} T={dims['T']:5d} start={dims['start']:5d}  max|err| {err.max().item():.2e}  "
                 f"outside tolerance {100 * bad:.4f}%  nan {int(torch.isnan(out).sum().item())}")
            print(s, flush=True)
            lines.append(s)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
