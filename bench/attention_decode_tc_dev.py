"""The tensor-core decode (kernels/safe/attention_decode/attention_decode_tc.cu) against the registered rs_nm
pair on the Qwen3-4B heads, timed as bench/attention_decode_dev2.py times its structures (CUDA graphs of many
decode + merge pairs over K/V copies past twice the L2; plain nodes and PDL pairs; % of copy on the K/V
bytes). The question (issue #13): with the scores and V sums on the tensor cores, does the arithmetic hide
under the stream, so that the pair at 8192 positions reaches 75% of copy (<= 14.9 us)?

    python3 bench/attention_decode_tc_dev.py OUT.txt
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from attention_decode_dev import RS, M4  # noqa: E402
from attention_decode_dev2 import RS_NM, main  # noqa: E402

TC = "kernels/safe/attention_decode/attention_decode_tc.cu"
B = RS_NM + ("-DKREG_QKC=4", "-DKREG_LAZY=8")        # the registered options (KREG_AHEAD=2 by default)
CANDIDATES = [   # (label, source, options, (merge options, threads), splits, shared bytes, cases)
    ("rs-nm-pf", RS, RS_NM, M4, None, 0, None),                  # the registered pair
    ("tc", TC, B, M4, None, 0, None),                            # as registered: two iterations in registers
    ("tc-S", TC, B + ("-DKREG_PRO=1",), M4, None, 0, None),      # the second iteration's rows before n arrives
    ("tc-pf2", TC, B + ("-UKREG_PREF", "-DKREG_PREF=2"), M4, None, 0, None),   # both iterations hinted pre-wait
    ("tc-a1", TC, B + ("-DKREG_AHEAD=1",), M4, None, 0, None),   # one iteration in registers
    ("tc-a1-pf2", TC, B + ("-DKREG_AHEAD=1", "-UKREG_PREF", "-DKREG_PREF=2"), M4, None, 0, None),
    ("rs-nm-pf'", RS, RS_NM, M4, None, 0, None),                 # (repeats: the run's noise)
    ("tc'", TC, B, M4, None, 0, None),
    ("tc-pf2'", TC, B + ("-UKREG_PREF", "-DKREG_PREF=2"), M4, None, 0, None),
]

if __name__ == "__main__":
    main(sys.argv[1], CANDIDATES, "tensor-core decode")
