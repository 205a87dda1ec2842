// kreg prover corpus: split_sum_staged
// The split sums of split_sum, with the positions staged through shared memory by cp.async the way
// attention_decode_tile3 (the unsafe decode) stages K/V rows: thread h copies x[j + u, h] (u < 4) into its own slots of one of
// two stages (zero-filled at or past the split's end) and reads back only its own slots after
// cp.async.wait_all, so no barrier is needed; iteration it reads stage it % 2 while stage (it + 1) % 2
// is in flight. Flag BUG_NEIGHBOUR: thread h reads the slot of thread h ^ 1, which only that thread's
// wait orders: a race (no barrier between the two threads). Flag BUG_NO_WAIT: the loop-top wait is
// missing, so a stage is read while this thread's own copies into it may still be landing.
__device__ __forceinline__ void cp4(float* smem, const float* src, bool valid) {
    unsigned d = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" :: "r"(d), "l"(src), "r"(valid ? 4 : 0));
}

__device__ __forceinline__ void stage(float (*buf)[64], const float* __restrict__ x, int j, int end, int H, int h) {
#pragma unroll
    for (int u = 0; u < 4; u++) {
        const bool valid = j + u < end;
        cp4(&buf[u][h], x + (valid ? (long long)(j + u) * H + h : 0), valid);
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}

__device__ __forceinline__ void split_sum_staged_body(const int* __restrict__ n_ptr, const float* __restrict__ x,
                                                      float* __restrict__ part, int H, int P) {
    __shared__ float stg[2][4][64];
    const int p = blockIdx.x, h = threadIdx.x;
    if (h >= H) return;
    const int n = n_ptr[0];
    const int C = (int)(((unsigned)n + (unsigned)P - 1u) / (unsigned)P);
    const int start = min(n, p * C), end = min(n, start + C);
    float s = 0.f;
    stage(stg[0], x, start, end, H, h);
#pragma unroll 1
    for (int it = 0, j = start; j < end; j += 4, it++) {
#ifndef BUG_NO_WAIT
        asm volatile("cp.async.wait_all;" ::: "memory");
#endif
        stage(stg[(it + 1) & 1], x, j + 4, end, H, h);
#pragma unroll
        for (int u = 0; u < 4; u++) {
#ifdef BUG_NEIGHBOUR
            const float v = stg[it & 1][u][h ^ 1];
#else
            const float v = stg[it & 1][u][h];
#endif
            s += j + u < end ? v : 0.f;
        }
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
    part[(long long)p * H + h] = s;
}

extern "C" __global__ void split_sum_staged(const int* __restrict__ n_ptr, const float* __restrict__ x,
                                       float* __restrict__ part, int H, int P) {
    split_sum_staged_body(n_ptr, x, part, H, P);
}
