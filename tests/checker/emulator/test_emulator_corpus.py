"""The emulator against independent NumPy references on the corpus kernels (tests/data/corpus)."""
import sys
from functools import cache

import numpy as np

from helpers.paths import DATA

sys.path.insert(0, str(DATA / "corpus"))
import cases as C  # noqa: E402

from kreg.checker.ptx.compile import compile_cuda  # noqa: E402

CASES = {c.name: c for c in C.CASES}


@cache
def ptx_of(name):
    return compile_cuda(CASES[name].source.read_text()).ptx


@cache
def run(name):
    case = CASES[name]
    bufs, args = C.initial(case)
    ins = {b.name: d.view(C.NP[b.dtype]) for b, d in bufs}
    outs = {k: np.frombuffer(v, C.NP[b.dtype]) for (b, _), (k, v) in zip(bufs, C.emulated(name).items())}
    return ins, outs, [a for a in args if a is not None]


def test_corpus_has_25_kernels_with_cases():
    files = sorted(p.stem for p in C.HERE.glob("*.cu"))
    assert len(files) >= 25
    assert files == sorted(CASES)


def test_inputs_unchanged_after_every_case():
    for name, case in CASES.items():
        bufs, _ = C.initial(case)
        after = C.emulated(name)
        for b, data in bufs:
            if b.role == "in":
                assert after[b.name] == data.tobytes(), (name, b.name)


def test_int32_overflow():
    i, o, _ = run("int32_overflow")
    x, y = i["a"].astype(np.int64), i["b"].astype(np.int64)
    ux, uy = x & 0xFFFFFFFF, y & 0xFFFFFFFF
    w = lambda v: ((np.asarray(v, dtype=object).astype(np.int64) + 2**31) % 2**32 - 2**31)  # noqa: E731
    r = o["o"].reshape(-1, 12).astype(np.int64)
    assert (r[:, 0] == w((x * y + 0x7FFFFFFF) % 2**32)).all()
    assert (r[:, 1] == w((ux * uy - 12345) % 2**32)).all()
    q = np.where(y != 0, np.trunc(x / np.where(y == 0, 1, y)), -1).astype(np.int64)
    assert (r[:, 2] == q).all()
    assert (r[:, 3] == np.where(y != 0, x - q * y, -1)).all()
    assert (r[:, 4] == w(np.where(uy != 0, ux // np.where(uy == 0, 1, uy), 7))).all()
    assert (r[:, 6] == [(int(a) * int(b)) >> 32 for a, b in zip(x, y)]).all()
    assert (r[:, 7] == w([(int(a) * int(b)) >> 32 for a, b in zip(ux, uy)])).all()
    assert (r[:, 8] == x >> (y & 31)).all()
    assert (r[:, 11] == w([((int(a) * int(b)) >> 17) % 2**32 for a, b in zip(x, y)])).all()


def test_divergence_and_loops():
    i, o, _ = run("divergence_nested")
    want = []
    for v in i["a"].tolist():
        acc = 0
        if v & 1:
            for k in range(v & 15):
                acc += k * v
            acc = acc ^ 0x5555 if v & 2 else acc - 77
        elif v & 4:
            k = v & 31
            while k > 0:
                acc += k
                k -= 3
                if acc > 100:
                    break
        else:
            acc = v * 3
        want.append(acc)
    assert o["o"].tolist() == want
    i, o, _ = run("collatz_while")
    want = []
    for a in i["a"].tolist():
        x, s = a % 1000 + 1, 0
        while x != 1:
            s += 1
            if s > 500:
                break
            x = 3 * x + 1 if x & 1 else x >> 1
        want.append(s)
    assert o["o"].tolist() == want


def test_shuffles():
    i, o, _ = run("shfl_up_scan")
    a = i["a"].reshape(-1, 32).astype(np.int64)
    assert (o["o"].reshape(-1, 32) == np.cumsum(a, axis=1)).all()
    i, o, _ = run("shfl_idx_width")
    a = i["a"]
    r = o["o"].reshape(-1, 5)
    t = np.arange(128)
    lane = t & 31
    assert (r[:, 0] == a[(t & ~15) + 3]).all()
    assert (r[:, 1] == a[(t & ~7) + ((t * 5) & 7)]).all()
    assert (r[:, 2] == a[t ^ 1]).all()
    assert (r[:, 3] == np.where((lane & 15) + 3 < 16, a[np.minimum(t + 3, 127)], a)).all()
    assert (r[:, 4] == np.where((lane & 7) >= 2, a[t - 2], a)).all()
    i, o, _ = run("warp_reduce_down")
    x = np.concatenate([i["x"], np.zeros(24, np.float32)]).reshape(32, 32)
    assert np.allclose(o["s"], x.sum(1), rtol=1e-5, atol=1e-5)
    mm = np.concatenate([i["x"].view(np.int32) & 0xFFFF, -np.ones(24, np.int32)]).reshape(32, 32)
    assert (o["m"] == mm.max(1)).all()


def test_shared_memory_and_barriers():
    i, o, _ = run("transpose_shared")
    assert (o["o"].reshape(45, 70) == i["a"].reshape(70, 45).T).all()
    i, o, _ = run("block_reduce_tree")
    x = np.concatenate([i["x"], np.zeros(24, np.float32)]).astype(np.float64).reshape(8, 128)
    assert np.allclose(o["o"], (x * x).sum(1), rtol=1e-5)
    i, o, _ = run("dynamic_shared_3d")
    a = i["a"].reshape(12, 32)
    t = np.arange(32)
    b = np.arange(12)[:, None]
    tz = t // 16
    by = (b // 2) % 3
    want = a[:, (t + 1) % 32] - ((31 - t) * 3 + b) + tz * 100 + by
    assert (o["o"].reshape(12, 32) == want).all()
    i, o, _ = run("matmul_tiled")
    ref = i["a"].reshape(37, 45).astype(np.float64) @ i["b"].reshape(45, 29)
    assert np.allclose(o["c"].reshape(37, 29), ref, rtol=1e-4, atol=1e-4)
    i, o, _ = run("partial_block")
    a = np.concatenate([i["a"], np.zeros(10, np.int32)]).reshape(5, 48)
    acc = np.cumsum(a, axis=1)
    nb = acc[:, np.arange(48) ^ 1]
    assert (o["o"] == (acc * 2 + nb).reshape(-1)[:230]).all()


def test_atomics():
    i, o, _ = run("atomics_int")
    a = i["a"]
    assert (o["h"] == np.bincount(a & 15, minlength=16)).all()
    s0 = C.make_buffer(CASES["atomics_int"], C.parse_arg(CASES["atomics_int"].args[2])).view(np.int32)
    assert o["s"][0] == min(s0[0], a.min()) and o["s"][1] == max(s0[1], a.max())
    assert o["s"][2] == np.minimum(s0[2].view(np.uint32), a.view(np.uint32).min()).view(np.int32)
    bl = a.reshape(4, 250)
    assert o["s"][4] == s0[4] + (a & 3).sum()
    b0 = C.make_buffer(CASES["atomics_int"], C.parse_arg(CASES["atomics_int"].args[3])).view(np.uint32)
    u = a.view(np.uint32)
    assert o["b"][0] == np.bitwise_and.reduce(u | 0x80000000) & b0[0]
    assert o["b"][2] == np.bitwise_xor.reduce(u) ^ b0[2]
    inc = int(b0[3])
    for _ in range(1000):
        inc = 0 if inc >= 1000 else inc + 1
    assert o["b"][3] == inc
    assert o["g"][0] == u.astype(np.uint64).sum()
    del bl
    i, o, _ = run("atomics_f32")
    x = i["x"]
    assert (o["s"][:8] == np.array([x[k::8].sum() for k in range(8)], np.float32)).all()
    assert (o["s"][8:] == 2.5).all() and o["c"][0] == 900


def test_vote_and_bits():
    i, o, _ = run("vote_ballot")
    v = np.concatenate([i["a"], np.zeros(24, np.int32)]).reshape(-1, 32)
    bits = lambda p: (p.astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(1).astype(np.uint32)  # noqa: E731
    bal = bits(v > 0)
    want = bal ^ ((v > 1000).any(1).astype(np.uint32) << 1) ^ (v > -1000).all(1) ^ \
        (np.bitwise_count(bits((v & 1) == 0)).astype(np.uint32) << 8)
    assert (o["o"] == np.repeat(want, 32)[:1000]).all()
    i, o, _ = run("bit_ops")
    x, y = i["a"].astype(np.uint64), i["b"].astype(np.uint64)
    r = o["o"].reshape(-1, 12)
    assert (r[:, 0] == np.bitwise_count(x)).all()
    assert (r[:, 1] == [32 - int(v).bit_length() for v in x]).all()
    assert (r[:, 2] == [int(f"{int(v):032b}"[::-1], 2) for v in x]).all()
    both = (y << np.uint64(32)) | x
    assert (r[:, 5] == ((both << (y & np.uint64(31))) >> np.uint64(32)) & np.uint64(0xFFFFFFFF)).all()
    assert (r[:, 7] == [(int(v) & -int(v)).bit_length() for v in x]).all()
    assert (r[:, 8] == (x >> (y & np.uint64(15))) & np.uint64(0x3FF)).all()
    bp = []
    for a, b in zip(x.tolist(), y.tolist()):
        src = a | (b << 32)
        bp.append(sum(((src >> (8 * ((0x5140 >> (4 * k)) & 7))) & 0xFF) << (8 * k) for k in range(4)))
    assert r[:, 3].tolist() == bp


def test_local_memory_and_widths():
    i, o, _ = run("local_array")
    a = i["a"].reshape(200, 8)
    r = o["o"].reshape(200, 9)
    assert (r[:, :8] == np.sort(a, axis=1)).all()
    assert (r[:, 8] == np.sort(a, axis=1)[np.arange(200), a[:, 0] & 7]).all()
    i, o, _ = run("mixed_width_ld")
    sc, uc, s = i["a"].view(np.int8).astype(np.int32), i["a"].astype(np.int32), i["b"].astype(np.int32)
    r = o["o"].reshape(-1, 4)
    assert (r[:, 0] == sc * 3).all() and (r[:, 1] == uc * 3).all() and (r[:, 2] == s * 5).all()
    assert (r[:, 3] == (s & 0xFFFF) * 5).all() and (o["by"] == ((uc + sc) & 0xFF)).all()
    i, o, _ = run("compare_select")
    x, y = i["a"], i["b"]
    r = o["o"].reshape(-1, 8)
    assert (r[:, 0] == np.minimum(x, y)).all()
    assert (r[:, 1].view(np.uint64) == np.minimum(x.view(np.uint64), y.view(np.uint64))).all()
    assert r[:, 5].tolist() == [(int(a) * int(b)) >> 64 for a, b in zip(x, y)]
    assert r[:, 6].view(np.uint64).tolist() == [(int(a) * int(b)) >> 64 for a, b in
                                                zip(x.view(np.uint64), y.view(np.uint64))]
    q = [0 if b == 0 else abs(int(a)) // abs(int(b)) * (1 if (a < 0) == (b < 0) else -1) for a, b in zip(x, y)]
    assert r[:, 3].tolist() == q


def test_float_kernels_match_numpy():
    i, o, args = run("saxpy_grid_stride")
    x, y = i["x"], i["y"]
    a = args[1]
    assert (o["o"] == (x.astype(np.float64) * a + y).astype(np.float32)).all()
    assert (o["o2"] == (x * y) + (a + x)).all()
    i, o, _ = run("precise_math")
    a, b = i["x"], i["y"]
    r = o["o"].reshape(-1, 12)
    assert (r[:, 0] == np.sqrt(np.abs(a))).all() and (r[:, 1] == a / b).all()
    assert (r[:, 2] == np.float32(1) / b).all()
    exact = a.astype(np.float64) * b + 1.0
    rz = exact.astype(np.float32)
    rz = np.where(np.abs(rz.astype(np.float64)) > np.abs(exact), np.nextafter(rz, np.float32(0)), rz)
    assert (r[:, 3] == rz).all()
    s = a.astype(np.float64) + b
    rd = s.astype(np.float32)
    rd = np.where(rd.astype(np.float64) > s, np.nextafter(rd, np.float32(-np.inf)), rd)
    assert (r[:, 7] == rd).all()
    i, o, _ = run("f16_math")
    x, y, z = i["a"], i["b"], i["c"]
    r = o["o"].reshape(-1, 10)
    assert (r[:, 0] == x + y).all() and (r[:, 1] == x - y).all() and (r[:, 2] == x * y).all()
    assert (r[:, 3] == (x.astype(np.float64) * y + z).astype(np.float16)).all()
    assert (r[:, 4] == np.maximum(x, y)).all() and (r[:, 6] == -np.abs(x)).all()
    i, o, _ = run("bf16_math")
    bf = lambda v: C._bf16(np.asarray(v, np.float32))  # noqa: E731
    f32 = lambda u: (u.astype(np.uint32) << 16).view(np.float32)  # noqa: E731
    xa, xb, f = f32(i["a"]), f32(i["b"]), i["f"]
    r = o["o"].reshape(-1, 10)
    assert (r[:, 0] == bf(xa + xb)).all() and (r[:, 1] == bf(xa * xb)).all()
    assert (r[:, 4] == bf(f)).all()
    assert (r[:, 5] == (f.view(np.uint32) >> 16)).all()          # round toward zero: truncate the bits


def test_conversions():
    i, o, _ = run("conversions")
    f, d, ll = i["f"], i["d"], i["l"]
    oi = o["oi"].reshape(-1, 10)
    with np.errstate(invalid="ignore"):
        sat = lambda v: np.where(np.isnan(v), 0, np.clip(np.asarray(v, np.float64), -2**31, 2**31 - 1)).astype(np.int64)  # noqa: E731
        assert (oi[:, 0] == sat(np.rint(f))).all()
        assert (oi[:, 1] == sat(np.trunc(f))).all()
        assert (oi[:, 2] == sat(np.floor(f))).all()
        assert (oi[:, 3] == sat(np.ceil(f))).all()
        assert (oi[:, 5] == np.where(np.isnan(d), -2**31, sat(np.rint(d)))).all()   # f64 NaN: INT_MIN (H100)
    assert (oi[:, 8] == (ll & 0xFF)).all()
    of = o["of"].reshape(-1, 10)
    assert (of[:, 0] == ll.astype(np.int32).astype(np.float32)).all()
    assert (of[:, 4] == ll.astype(np.float32)).all()
    with np.errstate(over="ignore", invalid="ignore"):
        assert (of[:, 5].view(np.uint32) == d.astype(np.float32).view(np.uint32))[~np.isnan(d)].all()
        oh = o["oh"].reshape(-1, 4)
        fin = ~np.isnan(f)
        assert (oh[:, 0] == f.astype(np.float16).view(np.uint16))[fin].all()
