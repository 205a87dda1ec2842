// cp.async (pipeline primitives) into shared memory with a zero-filled tail, __isShared/__isGlobal,
// atomicAdd on double and on half2/bfloat162, 64-bit atomicCAS.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_pipeline.h>
extern "C" __global__ void async_copy_atomics(const float* x, float* out, double* dsum, __half2* hsum,
                                              __nv_bfloat162* bsum, unsigned long long* cas, int n) {
    __shared__ __align__(16) float tile[128];
    int i = blockIdx.x * 128 + threadIdx.x;
    if (threadIdx.x < 32) {
        int base = blockIdx.x * 128 + threadIdx.x * 4;
        int avail = n - base;
        int bytes = avail >= 4 ? 16 : (avail > 0 ? avail * 4 : 0);
        __pipeline_memcpy_async(&tile[threadIdx.x * 4], &x[base < n ? base : 0], 16, 16 - bytes);
        __pipeline_commit();
        __pipeline_wait_prior(0);
    }
    __syncthreads();
    float v = tile[threadIdx.x];
    out[i] = v * 2.0f + (__isShared(&tile[0]) ? 1.0f : 0.0f) + (__isGlobal(x) ? 10.0f : 0.0f);
    atomicAdd(dsum, (double)(int)(v * 4.0f));
    atomicAdd(hsum, __floats2half2_rn(1.0f, (float)(threadIdx.x & 3)));
    atomicAdd(bsum, __floats2bfloat162_rn(2.0f, 0.5f));
    unsigned long long old = *cas, assumed;
    do { assumed = old; old = atomicCAS(cas, assumed, assumed + (unsigned long long)(threadIdx.x & 1) + 1ull); } while (old != assumed);
}
