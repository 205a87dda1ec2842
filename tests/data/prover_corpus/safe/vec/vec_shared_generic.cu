// A generated kernel that stages through shared memory by generic pointers: the shared offset made generic
// (cvta.shared), a generic store and a generic load at the thread's own element, a cp.async with ignore-src
// (no source read past the end) and one with a cache policy, each in bounds.
extern "C" __global__ void vec_shared_generic(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    __shared__ __align__(16) float s[256];
    __shared__ __align__(16) float t[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long g;
    asm("cvta.shared.u64 %0, %1;" : "=l"(g) : "l"((unsigned long long)__cvta_generic_to_shared(&s[threadIdx.x])));
    float v = i < n ? a[i] : 0.0f;
    asm volatile("st.f32 [%0], %1;" :: "l"(g), "f"(v) : "memory");
    unsigned ta = (unsigned)__cvta_generic_to_shared(&t[threadIdx.x]);
    asm volatile("{ .reg .pred p; setp.ge.s32 p, %2, %3; cp.async.ca.shared.global [%0], [%1], 4, p; }"
                 :: "r"(ta), "l"(b + (i < n ? i : 0)), "r"(i), "r"(n) : "memory");
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncthreads();
    float w;
    asm volatile("ld.f32 %0, [%1];" : "=f"(w) : "l"(g) : "memory");
    if (i < n) out[i] = w + t[threadIdx.x];
}
