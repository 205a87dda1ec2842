// Causal prefill attention on tensor cores (entries attention_prefill_tc_bf16, attention_prefill_tc_f16): the
// kernel, its design and its H100 figures are in kernels/include/kreg_prefill_tc.cuh, shared with the unsafe
// longest-rows-first build (kernels/unsafe/attention_prefill/attention_prefill_tc_lf.cu).
#include "kreg_prefill_tc.cuh"
