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
CANDIDATES = [   # (label, source, options, (merge options, threads), splits, shared bytes, cases)
    ("rs-nm-pf", RS, RS_NM, M4, None, 0, None),                  # the registered pair
    ("tc", TC, RS_NM, M4, None, 0, None),                        # rows of one iteration in flight
    ("tc-c2", TC, RS_NM + ("-DKREG_QKC=2",), M4, None, 0, None),     # the scores in two mma chains
    ("tc-c4", TC, RS_NM + ("-DKREG_QKC=4",), M4, None, 0, None),     # four
    ("tc-c2-l8", TC, RS_NM + ("-DKREG_QKC=2", "-DKREG_LAZY=8"), M4, None, 0, None),   # lazy rescale
    ("tc-c4-l8", TC, RS_NM + ("-DKREG_QKC=4", "-DKREG_LAZY=8"), M4, None, 0, None),
    ("tc-a2-c4-l8", TC, RS_NM + ("-DKREG_AHEAD=2", "-DKREG_QKC=4", "-DKREG_LAZY=8"), M4, None, 0, None),
    ("tc-c4-l8-m1", TC, ("-DKREG_QKC=4", "-DKREG_LAZY=8", "-DKREG_PREF=1"), M4, None, 0, None),   # masks in the loop
]

if __name__ == "__main__":
    main(sys.argv[1], CANDIDATES, "tensor-core decode")
