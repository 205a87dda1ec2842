// As bug_space_mismatch, with the state space spelled .shared::cta (the default sub-qualifier of .shared): a
// front end that knows only .shared takes the store for a generic one, and generic accesses are trusted to their
// pointer's provenance (out) the same way.
extern "C" __global__ void bug_space_cta(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = 0.0f;
    if (i < n) {
        float v = a[i] + b[i];
        out[i] = v;
        asm volatile("st.shared::cta.f32 [%0], %1;" :: "l"(out + i), "f"(v) : "memory");
    }
}
