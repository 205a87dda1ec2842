"""Every variant of the registry run on the CPU through kreg's PTX emulator at small seeded shapes of
its op (tails, partial warps, several rows) and compared with the float64 reference within the op's
tolerance (integers exactly); outputs are poisoned with NaN bits first, inputs must come back
bit-identical; a kernel broken on purpose is caught."""
import dataclasses

import numpy as np
import pytest

from kreg.checker.ptx.compile import compile_cuda
from kreg.checker.ptx.bind import bind
from kreg.conformance.dtypes import decode, encode, storage
from kreg.runtime import parsed

from helpers.emulated import CAT, ENTRIES, mismatches, mutated, shapes


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_variant_matches_reference_on_the_emulator(entry):
    found = shapes(entry)
    assert found
    for dims in found:
        assert mismatches(entry, dims) == []


@pytest.mark.parametrize("opname", sorted(CAT.ops))
def test_every_op_has_a_safe_and_an_unsafe_variant_per_dtype(opname):
    have = {(e.variant.safety, tuple(e.variant.types.values())) for e in ENTRIES if e.op == opname}
    bindings = [(t,) for t in ("bf16", "f16")] if CAT.ops[opname].types else [()]   # decode_advance: no dtype
    assert have == {(s, b) for s in ("safe", "unsafe") for b in bindings}, opname


@pytest.mark.parametrize("name,old,new", [
    ("rms_norm_bf16_safe", "v.v[j] * r * g.v[j]", "v.v[j] * r"),                 # weight dropped
    ("silu_mul_f16_safe", "if (e < n)", "if (e + 8 < n)"),                              # last vector missed
    ("add_rms_norm_bf16_safe", "s[k].v[j] += a.v[j];", "s[k].v[j] += a.v[j] * 1.01f;"),  # 1% off
    ("gather_row_bf16_safe", "(long long)R * H", "(long long)(R - 1) * H"),             # wrong row
    ("attention_decode_bf16_safe", "cnt = p < r ? Q : Q - 1,", "cnt = p < r ? Q - 1 : Q - 1,"),   # a position lost
    ("attention_decode_f16_safe", "for (int w = 0; w < WARPS; w++) mx = fmaxf(mx, wm[w]);",
     "for (int w = 1; w < WARPS; w++) mx = fmaxf(mx, wm[w]);"),                       # warp 0's max ignored
    ("attention_decode_bf16_rs_nm", "keep + __shfl_xor_sync(0xffffffffu, send, W)", "send + __shfl_xor_sync(0xffffffffu, keep, W)"),  # scatter halves swapped
    ("attention_decode_f16_rs_nm", "__shfl_sync(0xffffffffu, w, hbase + h * U + u)", "__shfl_sync(0xffffffffu, w, hbase + h * U)"),  # one weight for all positions
    ("attention_decode_f16_rs_nm", "for (; i0 + step_i < trips; i0 += step_i)", "for (; i0 < trips; i0 += step_i)"),  # unmasked past the split
    ("attention_decode_bf16_tc", "t & 1 ? 0x7632 : 0x5410", "t & 1 ? 0x5410 : 0x7632"),   # V's dims paired wrong
    ("attention_decode_f16_tc", "kreg::Cvt<T>::pack(w0 - rh.x, w1 - rh.y)", "0u"),        # P's lo part dropped
    ("attention_decode_bf16_tc", "ib + 2 * c + 1 < cnt", "ib + 2 * c + 1 <= cnt"),         # a position past the split
    ("attention_merge_bf16_safe", "const int p = pb + WARPS * u;", "const int p = pb + WARPS * u + 1;"),  # split lost
    ("decode_advance_safe", "n[0] = p + 1;", "n[0] = p;"),                              # length one short
    ("gemm_mma_bf16", 'asm volatile("cp.async.wait_all;" ::: "memory");', ""),    # no wait: stale tiles
    ("gemm_mma_f16", "b[j][0] = r[0]; b[j][1] = r[1];", "b[j][0] = r[1]; b[j][1] = r[0];"),  # k halves swapped
    ("gemm_mma_bf16", "(lane >> 2) + 8 * h]", "(lane & 7) + 8 * h]"),             # accumulator layout
    ("gemm_tc_bf16_safe", "K, k0 + BK);", "K, k0 + 2 * BK);"),                       # every other k tile lost
    ("attention_prefill_tc_bf16_safe", "s[j][e] = key <= qpos0 ? s[j][e] * sl2", "s[j][e] = key < qpos0 ? s[j][e] * sl2"),  # diagonal masked
    ("gemm_wgmma_bf16", 'asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");\n    asm volatile("cp.async',
     'asm volatile("cp.async'),                                                     # epilogue before the last wgmmas retire
    ("gemm_wgmma_bf16", "| (1ull << 62);", ";"),                                   # descriptors without the swizzle
    ("gemm_wgmma_f16", "16 * warp + (lane >> 2)", "16 * warp + (lane & 7)"),       # accumulator layout
    ("gemm_tc_f16_safe", "u[1] = m == 1 ? got : u[1];", "u[1] = m == 2 ? got : u[1];"),   # quad transpose wrong
    ("rms_norm_gemv_bf16_safe", "kreg::normed8(x, w, k, ss)", "kreg::normed8(x, x, k, ss)"),  # x for the weight
    ("rms_norm_gemv_f16_safe", "kreg::inv_rms(sq, K, eps)", "kreg::inv_rms(sq, K + 8, eps)"),   # mean over K + 8
    ("gemv_residual_f16_safe", "kreg::Cvt<T>::to(r[n]) + ", ""),                    # residual dropped
    ("rms_norm_gemv_swiglu_bf16_safe", "red[2 * threadIdx.x + 1]", "red[2 * threadIdx.x]"),  # gate for up
    ("rms_norm_gemv_swiglu_f16_safe", "(q & 1 ? (long long)I : 0ll)", "(q & 1 ? (long long)I - 1 : 0ll)"),  # up row off by one
])
def test_a_broken_kernel_is_caught(tmp_path, name, old, new):
    entry = next(e for e in ENTRIES if e.name == name)
    (tmp_path / "broken.cu").write_text(mutated(entry.variant.source_path.read_text(), old, new))
    broken = dataclasses.replace(entry.variant, source="broken.cu", path=str(tmp_path / "broken.yaml"))
    assert any(mismatches(entry, dims, broken) for dims in shapes(entry))


def test_decode_then_merge_is_attention_over_the_first_n_positions():
    """attention_decode at a device-scalar n below S (some splits empty), then attention_merge, on the
    emulator: softmax(scale q k^T) v over positions < n only, per query head of its KV group."""
    from kreg.checker.emulator.machine import Memory, run_bound
    dec = {e.variant.types["DT"]: e for e in ENTRIES if e.op == "attention_decode" and e.variant.safety == "safe"}
    mer = {e.variant.types["DT"]: e for e in ENTRIES if e.op == "attention_merge" and e.variant.safety == "safe"}
    rng = np.random.default_rng(7)
    Hq, Hkv, S, P, n = 10, 2, 40, 16, 13          # G = 5 (two head batches), C = 1: splits 13..15 empty
    for dt in ("bf16", "f16"):
        q, k, v = (encode(rng.standard_normal(s), dt) for s in ((Hq, 128), (S, Hkv, 128), (S, Hkv, 128)))
        mem, ptrs = Memory(), {}
        k[n:], v[n:] = 0x7FFF, 0x7FFF            # NaN rows past n (loaded by the first iteration, never weighed)
        for name, arr in (("q", q), ("k_cache", k), ("v_cache", v), ("n", np.array([n], np.int32))):
            ptrs[name] = mem.alloc(arr.nbytes, name)
            mem.write(ptrs[name], arr)
        for name, nbytes in (("o_part", P * Hq * 512), ("lse_part", P * Hq * 4), ("out", Hq * 256)):
            ptrs[name] = mem.alloc(nbytes, name)
            mem.write(ptrs[name], np.full(nbytes, 0xFF, np.uint8))
        for entry, dims in ((dec[dt], dict(Hq=Hq, Hkv=Hkv, S=S, P=P)), (mer[dt], dict(Hq=Hq, P=P))):
            v_ = entry.variant
            module = parsed(compile_cuda(v_.source_path.read_text(), v_.source_path.name, v_.options).ptx)
            for bl in bind(v_, CAT.ops[entry.op], module, dims, ptrs):
                run_bound(module, bl, mem)
        lse = np.frombuffer(mem.read(ptrs["lse_part"], P * Hq * 4), np.float32).reshape(P, Hq)
        assert np.isneginf(lse[n:]).all() and np.isfinite(lse[:n]).all()
        out = decode(np.frombuffer(mem.read(ptrs["out"], Hq * 256), storage(dt)), dt).reshape(Hq, 128)
        qf, kf, vf = (decode(x, dt).astype(np.float64) for x in (q, k, v))
        kvh = np.arange(Hq) // (Hq // Hkv)
        s = np.einsum("hd,jhd->hj", qf, kf[:n, kvh]) * float(np.float32(0.08838834764831845))
        w = np.exp(s - s.max(axis=1, keepdims=True))
        want = np.einsum("hj,jhd->hd", w / w.sum(axis=1, keepdims=True), vf[:n, kvh])
        tol = CAT.ops["attention_merge"].tolerance[dt]
        assert np.all(np.abs(out - want) <= tol["atol"] + tol["rtol"] * np.abs(want)), dt
