// A global pointer used as the address of a st.shared: the store goes to shared memory at that offset (far past
// the block's shared memory), not to out. A checker that trusts the pointer's provenance (out) whatever the
// instruction's state space sees an in-bounds store to out.
extern "C" __global__ void bug_space_mismatch(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = 0.0f;
    if (i < n) {
        float v = a[i] + b[i];
        out[i] = v;
        asm volatile("st.shared.f32 [%0], %1;" :: "l"(out + i), "f"(v) : "memory");
    }
}
