// The safe tensor-core prefill's kernel (kernels/include/kreg_prefill_tc.cuh), registered unsafe as
// attention_prefill_tc_lf_* with -DKREG_LONGEST_FIRST=1 (longest rows first: race_free closes only per case).
#include "kreg_prefill_tc.cuh"
