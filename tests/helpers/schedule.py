"""The order the suite's tests are handed to pytest-xdist in, so that the long ones start first on every worker
rather than one of them starting last and making the tail. pytest-xdist's worksteal gives worker i the i-th
of N consecutive shares of the collection and lets an idle worker take the later half of a busy one's queue:
so the long tests (LONG: seconds measured on the 2-core VM, an estimate that only orders, never decides
anything; a module named alone is one block, its tests kept together for its module-scoped fixtures) are dealt
to the shares longest first, each to the share with the least so far, at the head of its share; the others
keep their order (modules stay together) and fill the shares; LAST go at the very end (a test that reads what
the tests before it proved, helpers/session.py, and finds it made)."""
from __future__ import annotations

LONG = {    # node id (or the test function's, for all its parameters; or a module's, for all of it) -> seconds
    "tests/kernels/test_registry_conformance.py": 118,       # its fixture: the registry's numerics
    "tests/checker/prover/test_prover.py::test_registry_safe_variant_is_proven_for_all_dims": 20,
    "tests/checker/prover/test_prover.py::test_registry_safe_variant_is_proven_for_all_dims[gemm_wgs_bf16_safe]": 136,
    "tests/checker/prover/test_prover.py::test_registry_safe_variant_is_proven_for_all_dims[gemm_wgs_f16_safe]": 99,
    "tests/checker/prover/test_prover.py::test_registry_safe_variant_is_proven_for_all_dims[attention_decode_bf16_pf]": 58,
    "tests/checker/prover/test_prover.py::test_registry_safe_variant_is_proven_for_all_dims[attention_decode_bf16_safe]": 57,
    "tests/checker/prover/test_prover.py::test_registry_safe_variant_is_proven_for_all_dims[attention_prefill_wg_bf16]": 55,
    "tests/checker/prover/test_prover.py::test_registry_safe_variant_is_proven_for_all_dims[attention_prefill_wg_f16]": 52,
    "tests/checker/prover/test_prover.py::test_registry_safe_variant_is_proven_for_all_dims[attention_decode_f16_safe]": 31,
    "tests/checker/prover/test_prover.py::test_correct_kernel_is_never_refuted": 3,     # the corpus's 291 s, by kernel:
    **{f"tests/checker/prover/test_prover.py::test_correct_kernel_is_never_refuted[{n}]": t for n, t in (
        ("wg_pipe4", 65), ("wg_pipe", 50), ("wg_double", 25), ("wg_cp", 18), ("wg_pv", 14), ("wg_tile", 14),
        ("tc_tile", 11), ("tc_splitk", 9), ("addnorm_reread", 8), ("vec_gridstride_fixed", 8))},
    "tests/checker/prover/test_prover.py::test_buggy_kernel_never_proven_on_its_property": 5,
    **{f"tests/checker/prover/test_prover.py::test_buggy_kernel_never_proven_on_its_property[{n}]": t for n, t in (
        ("bug_wg_pipe_wait2", 56), ("bug_wg_pipe_two_stages", 42), ("bug_wg_cp_in_flight", 37))},
    "tests/kernels/test_gemm_pipeline_configurations.py::test_stage_overwritten_in_flight_is_caught_and_never_proven[pipe]": 60,
    "tests/kernels/test_gemm_pipeline_configurations.py::test_stage_overwritten_in_flight_is_caught_and_never_proven[deep]": 17,
    "tests/engine/test_engine_cli.py::test_readme_kreg_run_on_a_tiny_model_on_the_cpu": 66,
    "tests/cli/test_readme_commands.py::test_user_pytest_suite_passes_with_the_prover_on": 36,
    "tests/cli/test_readme_commands.py::test_quick_start_kreg_verify_proves_safe_variants": 32,
    "tests/checker/prover/test_prover_pipeline.py::test_stage_refilled_in_flight_is_never_proven": 49,
    "tests/checker/prover/test_prover_determinism.py::"
    "test_verdicts_and_solver_work_are_the_same_idle_under_load_and_with_another_hash_seed": 46,
    "tests/cli/test_submit.py::test_folder_through_a_local_ray_instance_gives_the_same_decisions": 35,
    "tests/checker/emulator/test_wgmma.py::test_prover_never_proves_the_unsafe_wgmma_kernel_race_free": 32,
    "tests/checker/ptx/test_toolchain_hazards.py::test_no_shipped_kernel_has_a_hazard": 22,
}
LAST = ("tests/checker/prover/test_prover.py::test_correct_kernels_proof_rate",)


def estimate(nodeid: str) -> float:
    """The seconds LONG gives this test (its own entry, else its function's), 0 if none."""
    return LONG.get(nodeid, LONG.get(nodeid.split("[")[0], 0))


def order(items: list, workers: int) -> list:
    """items (anything with a .nodeid) in the order to run them on `workers` worksteal workers."""
    last = [it for it in items if it.nodeid in LAST]
    blocks: dict[str, list] = {}       # a long module, or a long test alone, -> its items
    short = []
    for it in items:
        module = it.nodeid.split("::")[0]
        if it.nodeid in LAST:
            continue
        if module in LONG:
            blocks.setdefault(module, []).append(it)
        elif estimate(it.nodeid):
            blocks[it.nodeid] = [it]
        else:
            short.append(it)
    shares, loads = [[] for _ in range(workers)], [0.0] * workers
    for key in sorted(blocks, key=lambda k: -LONG.get(k, estimate(k))):
        i = loads.index(min(loads))
        shares[i] += blocks[key]
        loads[i] += LONG.get(key, estimate(key))
    sizes, left = [], len(items)                 # worksteal's first deal: len(pending) // workers left
    for i in range(workers):
        sizes.append(left // (workers - i))
        left -= sizes[-1]
    out = []
    for i, share in enumerate(shares):
        take = max(0, sizes[i] - len(share) - (len(last) if i == workers - 1 else 0))
        out += share + short[:take]
        short = short[take:]
    return out + short + last
