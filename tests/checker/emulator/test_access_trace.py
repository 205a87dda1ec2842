"""checker/emulator/trace.py: a traced launch's columns (the arrays the conformance guard check reads) say
what its Access objects say, access by access, in launch order, over several batches of blocks."""
import numpy as np

from kreg.checker.emulator import machine as E
from kreg.checker.emulator.trace import KINDS
from kreg.checker.ptx.compile import compile_cuda

from helpers.paths import ROOT


def test_columns_match_the_access_objects():
    src = (ROOT / "tests/data/corpus/block_reduce_tree.cu").read_text()
    mem = E.Memory()
    x, out = mem.alloc(4 * 300, "x"), mem.alloc(4 * 3, "out")
    mem.write(x, np.arange(300, dtype=np.float32))
    saved = E.BATCH_THREADS
    E.BATCH_THREADS = 128                                    # one block a batch: three batches
    try:
        res = E.launch(compile_cuda(src).ptx, "block_reduce_tree", 3, 128, 0,
                       [np.uint64(x), np.uint64(out), np.int32(300)], mem, trace=True)
    finally:
        E.BATCH_THREADS = saved
    for space in ("global", "shared"):
        want = [a for a in res.accesses if a.space == space]
        addr, width, kind, access = res.trace.columns(space)
        assert len(want) == addr.size == width.size == kind.size > 0
        assert addr.tolist() == [a.address for a in want] and width.tolist() == [a.width for a in want]
        assert [KINDS[k] for k in kind] == [a.kind for a in want]
        assert [access(i) for i in (0, len(want) // 2, len(want) - 1)] == [want[0], want[len(want) // 2], want[-1]]
    assert {a.block for a in res.accesses} == {(b, 0, 0) for b in range(3)} and len(res.trace) == len(res.accesses)
