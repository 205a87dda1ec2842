// Float atomics on integer-valued inputs (exact, so the order cannot change the sum), plus atomicCAS loop.
extern "C" __global__ void atomics_f32(const float* x, float* sums, int* cas_counter, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(&sums[i & 7], x[i]);
    int old = *(volatile int*)cas_counter, assumed;
    do { assumed = old; old = atomicCAS(cas_counter, assumed, assumed + 3); } while (old != assumed);
    atomicExch(&sums[8 + (i & 1)], 2.5f);
}
