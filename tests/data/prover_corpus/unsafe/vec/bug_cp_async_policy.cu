// cp.async.cg.shared.global.L2::cache_hint [dst], [src], 16, cache-policy: the fourth operand is a cache policy (a
// hint), not a src-size; the copy reads its 16 bytes whatever the policy's value. Every thread copies a[4i..4i+3],
// past the end of a for i >= N/4. A checker that reads the policy (0 here) as src-size sees no read at all.
extern "C" __global__ void bug_cp_async_policy(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    __shared__ __align__(16) float s[256 * 4];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned sa = (unsigned)__cvta_generic_to_shared(&s[threadIdx.x * 4]);
    asm volatile("{ .reg .b64 pol; mov.b64 pol, 0; cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, pol; }"
                 :: "r"(sa), "l"(a + 4 * i) : "memory");
    asm volatile("cp.async.wait_all;" ::: "memory");
    if (i < n) out[i] = s[threadIdx.x * 4] * 0.0f + a[i] + b[i];
}
