"""conformance/speed.plan_sets: how the speed figure rotates buffer sets past L2 (CPU; the timing itself
is GPU-only). Ops that touch a buffer only in part share it, so a decode gather reads cold rows."""
from kreg.checker.ptx.bind import buffer_sizes
from kreg.conformance.speed import MAX_SETS, plan_sets
from kreg.registry.catalog import load_catalog

L2 = 50 << 20


def _plan(op_name, variant_name, case, arena=2 * L2):
    cat = load_catalog()
    op = cat.ops[op_name]
    v = next(e.variant for e in cat.entries if e.variant.name == variant_name)
    dims = op.cases[case]
    return plan_sets(op, v, dims, buffer_sizes(v, op, dims), arena), op, dims


def test_decode_gather_shares_the_table_and_rotates_its_ids():
    (shared, set_bytes, touched, nsets), op, d = _plan("embedding", "embedding_bf16_safe", "qwen3-32b-decode")
    assert shared == ["table"]
    assert set_bytes < 64 << 10                                # ids and one output row, padded
    assert touched == set_bytes + d["H"] * 2                    # plus the one row it reads
    assert nsets * touched >= 2 * L2 and (nsets - 1) * touched < 2 * L2


def test_dense_op_is_rotated_whole_as_before():
    (shared, set_bytes, touched, nsets), op, d = _plan("add", "add_bf16_safe", "qwen3-0.6b-decode")
    assert shared == [] and touched == set_bytes
    assert nsets == min(MAX_SETS, -(-2 * L2 // set_bytes))


def test_a_set_larger_than_the_arena_is_one_set():
    (shared, set_bytes, touched, nsets), _, _ = _plan("embedding", "embedding_bf16_safe", "qwen3-32b-prefill",
                                                       arena=1)
    assert nsets == 1 and touched > set_bytes
