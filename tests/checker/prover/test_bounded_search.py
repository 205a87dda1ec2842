"""The bounded search for violations (checker/emulator/search.py) and how it settles what the proof leaves
`unknown` (checker/prover/bounded.py): it refutes the bug of each issue-32 class kernel it can reach at small
shapes, with a witness that replays, never reports a violation on a correct kernel, and the verdicts it
leaves unknown name what the prover does not model."""
from __future__ import annotations


import pytest

from helpers.prover_corpus import LABELS, corpus_ops, corpus_prove, corpus_ptx, corpus_variant

from kreg.checker.emulator import machine as E
from kreg.checker.emulator.search import run_at, search, shapes
from kreg.checker.prover.prove import PROPS
from kreg.checker.ptx import parse as P
from kreg.checker.ptx.pdl import wait_first_problem

FOUND_BY_SEARCH = ["bug_pdl_store_before_wait", "bug_mma_store_rows", "bug_cp_pipe_wait2", "bug_splitk_slice_index",
                   "bug_ticket_reread", "bug_devlen_inclusive", "bug_shist_no_zero_barrier",
                   "bug_helper_return_barrier", "bug_handoff_flag_first", "bug_ballot_inclusive", "bug_missing_barrier"]
CLEAN = ["pdl_scale", "mma_store_frag", "ticket_compact", "devlen_sum", "shist_shared", "helper_early_exit",
         "handoff_flag", "ballot_scatter", "rows_syncwarp", "hist_atomic"]


def _search(name, props=frozenset(PROPS)):
    v = corpus_variant(name)
    return search(v, corpus_ops()[v.op], P.parse(corpus_ptx(name)), set(props))


@pytest.mark.parametrize("name", FOUND_BY_SEARCH)
def test_search_finds_the_bug_and_its_witness_replays(name):
    prop = LABELS[name]["breaks"]
    found = _search(name)
    assert set(found) == {prop}, {p: f.what for p, f in found.items()}
    w = found[prop].witness
    v = corpus_variant(name)
    assert set(w["dims"]) == set(corpus_ops()[v.op].dims) and not corpus_ops()[v.op].dims_ok(w["dims"])
    assert w["instrs"] and all(i["text"] for i in w["instrs"])
    again = run_at(v, corpus_ops()[v.op], P.parse(corpus_ptx(name)), w["dims"], w["inputs"], {prop})
    assert [f.witness for f in again if f.prop == prop][:1] == [w]


@pytest.mark.parametrize("name", CLEAN)
def test_search_reports_nothing_on_correct_kernels(name):
    assert _search(name) == {}


def test_shapes_are_inside_the_op_and_sweep_edges():
    v = corpus_variant("bug_ballot_inclusive")
    got = shapes(corpus_ops()[v.op], v)
    ns = [d["N"] for d in got]
    assert ns[0] == 1 and {31, 32, 33, 255, 256, 257} <= set(ns)
    assert all(not corpus_ops()[v.op].dims_ok(d) for d in got)
    assert got == shapes(corpus_ops()[v.op], v)          # deterministic


def test_strict_barriers_reject_an_exit_before_a_barrier():
    ptx = P.parse(corpus_ptx("bug_helper_return_barrier"))
    mem = E.Memory()
    x, y = mem.alloc(4 * 3), mem.alloc(4 * 3)
    args = (x, y, 3)
    E.launch(ptx, "bug_helper_return_barrier", 1, 256, 0, args, mem)           # as on the GPU: runs
    with pytest.raises(E.EmulatorError) as e:
        E.launch(ptx, "bug_helper_return_barrier", 1, 256, 0, args, mem, strict_barriers=True)
    assert e.value.kind == "barrier-divergence"


def test_pdl_misuse_is_seen_by_the_pdl_check():
    assert wait_first_problem(P.parse(corpus_ptx("pdl_scale")).kernel("pdl_scale")) is None
    assert "before any griddepcontrol.wait" in wait_first_problem(
        P.parse(corpus_ptx("bug_pdl_store_before_wait")).kernel("bug_pdl_store_before_wait"))


def test_prover_refutes_by_bounded_witness_where_the_proof_cannot():
    v = corpus_prove("bug_handoff_flag_first")["race_free"]
    assert v.status == "refuted" and "bounded witness at dims" in v.reason
    assert v.witness["bounded"] and v.replay == "confirmed" and len(v.witness["threads"]) == 2


def test_unknown_names_what_is_not_modelled():
    res = corpus_prove("handoff_flag")
    assert res["race_free"].status == "unknown"
    assert "flag hand-off" in res["race_free"].reason and "not modelled" in res["race_free"].reason


RACES_ON = ["bug_missing_barrier", "bug_two_per_index", "bug_split_neighbour", "bug_neighbour", "bug_syncwarp_cross",
            "bug_transpose_nobarrier", "bug_tc_no_wait", "rows_syncwarp", "matmul_tiled", "split_sum_staged",
            "cp_pipe_rows", "wg_cp"]


@pytest.mark.parametrize("name", RACES_ON)
def test_race_search_over_arrays_meets_the_in_order_search_first_pair(name):
    """races() (the trace's arrays, sorted per unit of bytes) reports exactly the pair the in-order FastTrack
    walk meets first, or none where it finds none, at the search's first shapes."""
    from kreg.checker.emulator.search import races, races_in_order
    from kreg.checker.ptx.bind import bind, buffer_sizes
    v, op, mod = corpus_variant(name), corpus_ops()[corpus_variant(name).op], P.parse(corpus_ptx(name))
    compared, found = 0, 0
    for dims in shapes(op, v)[:4]:
        mem = E.Memory()
        ptrs = {k: mem.alloc(max(sz, 1), k) for k, sz in buffer_sizes(v, op, dims).items()}
        for b in bind(v, op, mod, dims, ptrs, {}):
            res = E.launch(mod, b.entry, b.grid, b.block, b.shared, b.args, mem, trace=True, max_trace=400_000)
            k = mod.kernel(b.entry)
            got = races(res.trace.table(b.grid, b.block), k, b.grid, b.block)
            assert got == races_in_order(res.trace.accesses(), k, b.grid, b.block)
            compared, found = compared + 1, found + (got is not None)
    assert compared and (found > 0) == (LABELS[name].get("breaks") == "race_free"), found
