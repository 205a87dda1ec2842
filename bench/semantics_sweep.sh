#!/bin/sh
# The semantics differential test (tests/checker/prover/test_semantics_differential.py) with many more random input
# batches per instruction form than CI runs: ./bench/semantics_sweep.sh [batches per form, default 100]
cd "$(dirname "$0")/.." && KREG_DIFF_EXAMPLES="${1:-100}" exec nice python -m pytest -q -p no:cacheprovider \
    tests/checker/prover/test_semantics_differential.py -k "random or functions"
