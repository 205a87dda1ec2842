"""The wgmma register-A / transposed-B form in the emulator (checker/emulator/wgmma.py) and the wgmma prefill
(kernels/safe/attention_prefill/attention_prefill_wg.cu) on the CPU: the prefill's layout probe (A [64][BN]
loaded into the PTX ISA's m64k16 A register fragment, B [BN][128] keys x dims in a V stage read MN-major
through a descriptor with LBO = the distance of the two 64-dim halves, BN / 16 chained steps, the raw
accumulators) against the fragment layouts written out here, on operands that code their rows, columns and
k; random integers exact; broken layouts, descriptors and pipelines caught; the prefill at small cases in
both loop forms; the registered build safe."""
import numpy as np
import pytest

from kreg.checker.ptx.compile import compile_cuda
from kreg.checker.emulator.machine import Memory, launch
from kreg.registry.catalog import load_catalog
from kreg.runtime import parsed

CAT = load_catalog()
SRC = CAT.find("attention_prefill_wg_bf16").variant.source_path


def _bf16(a):
    u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def _probe(A, B, src=None):
    """Raw accumulators [128 threads][64] of attention_prefill_wg_probe_bf16 (A [64][BN] x B [BN][128])."""
    bn = A.shape[1]
    ptx = compile_cuda(src or SRC.read_text(), SRC.name, ("--gpu-architecture=compute_90a", f"-DKREG_BN={bn}")).ptx
    mem = Memory()
    pa, pb, pd = mem.alloc(2 * A.size), mem.alloc(2 * B.size), mem.alloc(128 * 64 * 4)
    mem.write(pa, _bf16(A))
    mem.write(pb, _bf16(B))
    launch(parsed(ptx), "attention_prefill_wg_probe_bf16", 1, 128, 4 * bn * 128 + 1024,
           [np.uint64(pa), np.uint64(pb), np.uint64(pd)], mem)
    return np.frombuffer(mem.read(pd, 128 * 64 * 4), np.float32).reshape(128, 64)


def _isa_tile(raw):
    """The m64n128 D fragment of the ISA: lane l of warp w holds d[4 j + h] at row 16 w + l / 4 + 8 (h / 2),
    column 8 j + 2 (l % 4) + h % 2."""
    D = np.full((64, 128), np.nan)
    for t in range(128):
        w, lane = divmod(t, 32)
        for i in range(64):
            j, h = divmod(i, 4)
            D[16 * w + lane // 4 + 8 * (h // 2), 8 * j + 2 * (lane % 4) + h % 2] = raw[t, i]
    return D


def _pick(bn):
    """A [64][bn] selecting k = m % bn for row m (a permutation-like 0/1 matrix)."""
    A = np.zeros((64, bn), np.float32)
    A[np.arange(64), np.arange(64) % bn] = 1
    return A


@pytest.mark.parametrize("bn", [64, 128])
@pytest.mark.parametrize("case", ["B-k", "B-n", "A-rows", "A-k"])
def test_probe_follows_the_isa_register_fragment_and_mn_major_layout(bn, case):
    m, n = np.meshgrid(np.arange(64), np.arange(128), indexing="ij")
    k_of = np.arange(bn, dtype=np.float32)
    if case == "B-k":         # B's k (keys) order: A picks k = m, B's row k holds k + 1
        A, B, want = _pick(bn), np.repeat(k_of[:, None] + 1, 128, 1), (m % bn) + 1
    elif case == "B-n":       # B's n (dims, contiguous in a row, two 64-dim halves LBO apart) land in D's columns
        A, B, want = _pick(bn), np.repeat(np.arange(128, dtype=np.float32)[None, :] + 1, bn, 0), n + 1
    elif case == "A-rows":    # A's rows land in D's rows: A[m][k] = m + 1 at the last k only, B's last row ones
        A = np.zeros((64, bn), np.float32)
        A[:, bn - 1] = np.arange(64) + 1
        B = np.zeros((bn, 128), np.float32)
        B[bn - 1] = 1
        want = m + 1
    else:                     # A's k order: A[m][k] = k + 1 for every m, B selects k = n % bn with weight 1
        A = np.repeat(k_of[None, :] + 1, 64, 0)
        B = np.zeros((bn, 128), np.float32)
        B[np.arange(128) % bn, np.arange(128)] = 1
        want = (n % bn) + 1
    assert np.array_equal(_isa_tile(_probe(A, B.astype(np.float32))), want.astype(np.float64))


@pytest.mark.parametrize("bn", [64, 128])
def test_probe_random_integers_exact(bn):
    rng = np.random.default_rng(bn)
    A, B = rng.integers(-4, 5, (64, bn)).astype(np.float32), rng.integers(-4, 5, (bn, 128)).astype(np.float32)
    assert np.array_equal(_isa_tile(_probe(A, B)), A.astype(np.float64) @ B)


@pytest.mark.parametrize("old,new,why", [
    ("p, 1, 1, 1;}", "p, 1, 1, 0;}", "B read K-major (transpose-b 0) instead of MN-major"),
    ("sw128_desc(vs + 2048 * kv, KH)", "sw128_desc(vs + 2048 * kv, 2 * KH)", "the second 64-dim half read from the wrong place"),
    ("sw128_desc(vs + 2048 * kv, KH)", "sw128_desc(vs + 1024 * kv, KH)", "k16 steps advanced by 8 keys, not 16"),
    ("ph[kv][1] = a32[((r + 8) * BN + c) / 2];\n        ph[kv][2]", "ph[kv][2] = a32[((r + 8) * BN + c) / 2];\n        ph[kv][1]",
     "A fragment registers 1 and 2 swapped"),
])
def test_broken_probe_is_caught(old, new, why):
    src = SRC.read_text()
    assert old in src
    rng = np.random.default_rng(3)
    A, B = rng.integers(-4, 5, (64, 64)).astype(np.float32), rng.integers(-4, 5, (64, 128)).astype(np.float32)
    assert not np.array_equal(_isa_tile(_probe(A, B, src.replace(old, new))), A.astype(np.float64) @ B), why


def _prefill(src: str, opts: tuple, dims: dict, seed: int = 0):
    """attention_prefill_wg_bf16 built with opts on random normals: (out, float64 reference) as float64."""
    from kreg.conformance.references import REFERENCES
    T, Hq, Hkv, S, start = (dims[k] for k in ("T", "Hq", "Hkv", "S", "start"))
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((T, Hq, 128), (S, Hkv, 128), (S, Hkv, 128)))
    bits = [_bf16(x) for x in (q, k, v)]
    vals = [(b.astype(np.uint32) << 16).view(np.float32).astype(np.float64) for b in bits]
    ptx = compile_cuda(src, SRC.name, ("--gpu-architecture=compute_90a",) + opts).ptx
    mem = Memory()
    ptrs = [mem.alloc(b.nbytes) for b in bits]
    for p, b in zip(ptrs, bits):
        mem.write(p, b)
    po = mem.alloc(T * Hq * 128 * 2)
    bn = int(next(o for o in opts if o.startswith("-DKREG_BN=")).split("=")[1])
    stages = int(next(o for o in opts if o.startswith("-DKREG_STAGES=")).split("=")[1])
    q_bytes = 0 if "-DKREG_QREG=1" in opts else 2 * 128 * 128
    launch(parsed(ptx), "attention_prefill_wg_bf16", ((T + 127) // 128, Hq), 256, q_bytes + stages * 4 * bn * 128 + 1024,
           [np.uint64(ptrs[0]), np.uint64(ptrs[1]), np.uint64(ptrs[2]), np.float32(128 ** -0.5), np.uint64(po),
            np.int32(T), np.int32(Hq), np.int32(Hkv), np.int32(start)], mem)
    out = (np.frombuffer(mem.read(po, T * Hq * 128 * 2), np.uint16).astype(np.uint32) << 16).view(np.float32)
    ref = REFERENCES["attention_prefill"](q=vals[0], k_cache=vals[1], v_cache=vals[2], scale=128 ** -0.5, T=T, Hq=Hq,
                                          Hkv=Hkv, S=S, start=start)
    return out.reshape(T, Hq, 128).astype(np.float64), np.asarray(ref["out"] if isinstance(ref, dict) else ref)


DIMS = {"T": 130, "Hq": 2, "Hkv": 1, "S": 200, "start": 70}   # two row tiles, a partial one, a cached prefix


@pytest.mark.parametrize("opts", [("-DKREG_BN=64", "-DKREG_STAGES=2", "-DKREG_PIPE=0"),
                                  ("-DKREG_BN=64", "-DKREG_STAGES=3", "-DKREG_PIPE=1"),
                                  ("-DKREG_BN=128", "-DKREG_STAGES=3", "-DKREG_PIPE=1", "-DKREG_PINGPONG=1"),
                                  ("-DKREG_BN=64", "-DKREG_STAGES=4", "-DKREG_PIPE=1", "-DKREG_PINGPONG=1", "-DKREG_QREG=1")],
                         ids=["plain", "pipelined", "ping-pong", "q-registers"])
def test_prefill_within_one_rounding_of_the_reference(opts):
    out, ref = _prefill(SRC.read_text(), opts, DIMS)
    assert np.all(np.abs(out - ref) <= 1e-4 + 2.0 ** -8 * np.abs(ref))


@pytest.mark.parametrize("old,new,why", [
    ("            wg_wait0();\n            keep(ph);\n            keep(pl);\n            if (moved)",
     "            keep(ph);\n            keep(pl);\n            if (moved)", "o rescaled while P V is in flight"),
    ('asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");\n            unsigned nh', "unsigned nh",
     "scores read before S retires"),
    ("const unsigned st = kvs + (nx % STAGES) * STAGE;", "const unsigned st = kvs + ((nx + 1) % STAGES) * STAGE;",
     "tiles copied into a stage still read"),
])
def test_broken_pipelined_prefill_is_caught(old, new, why):
    src = SRC.read_text()
    assert old in src
    out, ref = _prefill(src.replace(old, new), ("-DKREG_BN=64", "-DKREG_STAGES=3", "-DKREG_PIPE=1"), DIMS)
    assert not np.all(np.abs(out - ref) <= 1e-4 + 2.0 ** -8 * np.abs(ref)), why


def test_wgmma_prefill_is_safe_in_block_order_and_targets_sm90a():
    """Registered safe (tests/checker/prover/test_prover.py proves every safe variant for all dims): the block-order build
    (KREG_LONGEST_FIRST=0), for sm_90a; no unsafe twin of the same build."""
    cat = load_catalog()
    for dt in ("bf16", "f16"):
        v = cat.find(f"attention_prefill_wg_{dt}").variant
        assert v.safety == "safe" and "--gpu-architecture=compute_90a" in v.options
        assert "-DKREG_LONGEST_FIRST=0" in v.options
        twins = [e.variant for e in cat.entries if e.variant.op == v.op and e.variant.name != v.name
                 and e.variant.source_path == v.source_path and e.variant.options == v.options
                 and e.variant.entry == v.entry]
        assert not twins


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ["bf16", "f16"])
@pytest.mark.parametrize("bn", [64, 128])
def test_probe_on_this_gpu(dt, bn):
    """On a GPU: the probe on random integers is exact there (the layout the emulator assumes is the
    hardware's), and on normals the emulator's registers lie within the k16 steps' documented bound of the
    GPU's (H100, run 1 of bench/dev_fa3.sh: bit-identical 99.5% bf16, 94% f16)."""
    from helpers import wgmma_probes as P
    from kreg.runtime.gpu import GpuModule
    ptx = compile_cuda(SRC.read_text(), SRC.name, ("--gpu-architecture=compute_90a", f"-DKREG_BN={bn}")).ptx
    gmod, emod = GpuModule(ptx), parsed(ptx)
    rng = np.random.default_rng(bn)
    A, B = rng.integers(-4, 5, (64, bn)).astype(np.float32), rng.integers(-4, 5, (bn, 128)).astype(np.float32)
    a, b = P.bits_of(A, dt), P.bits_of(B, dt)
    assert np.array_equal(P.prefill_tile(P.prefill_probe(P.on_gpu, gmod, dt, a, b, bn)), A.astype(np.float64) @ B)
    A, B = rng.standard_normal((64, bn)).astype(np.float32), rng.standard_normal((bn, 128)).astype(np.float32)
    a, b = P.bits_of(A, dt), P.bits_of(B, dt)
    g, e = (P.prefill_probe(run, m, dt, a, b, bn) for run, m in ((P.on_gpu, gmod), (P.on_emulator, emod)))
    scale = np.abs(P.value_of(a, dt)) @ np.abs(P.value_of(b, dt))
    assert (np.abs(P.prefill_tile(g) - P.prefill_tile(e)) / scale).max() <= 3 * bn * 2.0 ** -24
