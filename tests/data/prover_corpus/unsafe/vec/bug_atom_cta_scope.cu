// red/atom with .cta scope is atomic only with respect to the threads of its own block (PTX memory model: two
// operations are morally strong only if each one's scope includes the other's thread). Threads of different blocks
// adding to out[0] with red.relaxed.cta race. A checker that exempts every pair of atomics from the race check,
// whatever their scopes, proves this race-free.
extern "C" __global__ void bug_atom_cta_scope(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && i > 0) { out[i] = a[i] + b[i]; } if (i < n) asm volatile("red.relaxed.cta.global.add.f32 [%0], %1;" :: "l"(out), "f"(a[0] + b[0]) : "memory");
}
