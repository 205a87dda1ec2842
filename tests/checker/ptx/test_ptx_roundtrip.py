"""The PTX front end on the corpus: every kernel parses, and every instruction renders back to text that
parses to the same instruction."""
import sys

import pytest

from kreg.checker.ptx import parse as P
from kreg.checker.ptx.compile import compile_cuda

from helpers.paths import DATA

sys.path.insert(0, str(DATA / "corpus"))
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


def test_cache_qualified_vector_load_parses_as_a_load():
    """A '{' after an opcode with '::' qualifiers (ld.global.nc.L1::no_allocate.v4.u32 {..}, [..]) is a
    vector operand, not a scope: the load parses with its qualifiers as modifiers and renders back."""
    ptx = """.version 9.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
\t.reg .b32 %r<5>;
\t.reg .b64 %rd<2>;
\tld.param.u64 %rd1, [p];
\tld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%r1,%r2,%r3,%r4}, [%rd1];
\tret;
}
"""
    ins = next(i for i in P.parse(ptx).kernel("k").instrs if i.op == "ld" and "global" in i.mods)
    assert ins.mods == ("global", "nc", "L1::no_allocate", "L2::256B", "v4", "u32") and len(ins.args[0].items) == 4
    again = P.parse_instruction(P.render(ins))
    assert (again.op, again.mods) == (ins.op, ins.mods)
