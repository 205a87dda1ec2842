"""The PTX front end on the corpus: every kernel parses, and every instruction renders back to text that
parses to the same instruction."""
import sys
from pathlib import Path

import pytest

from kreg.checker import ptx as P
from kreg.checker.compile import compile_cuda

sys.path.insert(0, str(Path(__file__).parent / "corpus"))
import cases as C  # noqa: E402


@pytest.mark.parametrize("case", C.CASES, ids=lambda c: c.name)
def test_corpus_kernel_round_trips(case):
    module = P.parse(compile_cuda(case.source.read_text()).ptx)
    k = module.kernel(case.name)
    assert k.instrs and k.blocks
    for ins in k.instrs:
        again = P.parse_instruction(P.render(ins))
        same_args = again.args == ins.args or [P.render_operand(a) for a in again.args] == \
            [P.render_operand(a) for a in ins.args]            # NaN immediates: compare their bit patterns
        assert same_args and (again.op, again.mods, again.pred, again.neg) == (ins.op, ins.mods, ins.pred, ins.neg), \
            ins.text


def test_unknown_instruction_names_itself_and_its_line():
    ptx = """.version 9.0
.target sm_90
.address_size 64
.visible .entry k()
{
\t.reg .b32 %r<3>;
\tmov.u32 %r1, 1;
\tfrobnicate.b32 %r2, %r1;
\tret;
}
"""
    with pytest.raises(P.ParseError) as e:
        P.parse(ptx)
    assert e.value.line == 8 and "frobnicate" in str(e.value)
