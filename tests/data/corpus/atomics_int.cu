// Integer atomics whose final values do not depend on the order: histogram, min, max, and, or, xor, inc.
extern "C" __global__ void atomics_int(const int* a, int* hist, int* stats, unsigned* bits, unsigned long long* big, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = a[i];
    atomicAdd(&hist[v & 15], 1);
    atomicMin(&stats[0], v);
    atomicMax(&stats[1], v);
    atomicMin((unsigned*)&stats[2], (unsigned)v);
    atomicMax((unsigned*)&stats[3], (unsigned)v);
    atomicAnd(&bits[0], (unsigned)v | 0x80000000u);
    atomicOr(&bits[1], (unsigned)v & 0x0f0f0f0fu);
    atomicXor(&bits[2], (unsigned)v);
    atomicInc(&bits[3], 1000u);
    atomicAdd(&big[0], (unsigned long long)(unsigned)v);
    __shared__ int local_count;
    if (threadIdx.x == 0) local_count = 0;
    __syncthreads();
    atomicAdd(&local_count, v & 3);
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(&stats[4], local_count);
}
