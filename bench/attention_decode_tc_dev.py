"""The tensor-core decode (kernels/safe/attention_decode/attention_decode_tc.cu) against the registered rs_nm
pair on the Qwen3-4B heads, timed as bench/attention_decode_dev2.py times its structures (CUDA graphs of many
decode + merge pairs over K/V copies past twice the L2; plain nodes and PDL pairs; % of copy on the K/V
bytes). The question (issue #13): with the scores and V sums on the tensor cores, does the arithmetic hide
under the stream, so that the pair at 8192 positions reaches 75% of copy (<= 14.9 us)? Nearly: the
registered build ~74% (rs ~71%); bench/results/attention_decode_tc_dev.txt. Earlier rows of that file's
header: the structures tried on the way (one / two / three iterations in registers, score chains, lazy
rescale, the prologue's clamp, L2 hints of two iterations).

    python3 bench/attention_decode_tc_dev.py OUT.txt
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from attention_decode_dev import RS, M4  # noqa: E402
from attention_decode_dev2 import RS_NM, main  # noqa: E402

TC = "kernels/safe/attention_decode/attention_decode_tc.cu"
B = RS_NM + ("-DKREG_QKC=4", "-DKREG_LAZY=8", "-DKREG_LDQ=1")   # the registered options (KREG_AHEAD=2 by default)
B0 = B[:-1]                                                   # the same with plain loads (L1 allocating)
CANDIDATES = [   # (label, source, options, (merge options, threads), splits, shared bytes, cases)
    ("rs-nm-pf", RS, RS_NM, M4, None, 0, None),                  # the registered rs pair
    ("tc", TC, B, M4, (16, 33, 66), 0, None),                    # as registered: K/V loads not allocating in L1
    ("tc-l1", TC, B0, M4, None, 0, None),                        # the same with L1-allocating loads
    ("tc-a1", TC, B + ("-DKREG_AHEAD=1",), M4, None, 0, None),   # one iteration in registers
    ("tc-S", TC, B + ("-DKREG_PRO=1",), M4, None, 0, None),      # the second iteration's rows before n arrives
    ("rs-nm-pf'", RS, RS_NM, M4, None, 0, None),                 # (repeats: the run's noise)
    ("tc'", TC, B, M4, None, 0, None),
    ("tc''", TC, B, M4, None, 0, None),
]

if __name__ == "__main__":
    main(sys.argv[1], CANDIDATES, "tensor-core decode")
