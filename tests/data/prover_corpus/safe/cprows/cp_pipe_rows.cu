__device__ __forceinline__ void cp16(float* dst, const float* src) {
    unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(d), "l"(src) : "memory");
}
extern "C" __global__ void cp_pipe_rows(const float* __restrict__ x, float* __restrict__ out, int M, int K) {
    // 64 threads stream a row in chunks of 256 floats (16 bytes each), two stages in flight
    __shared__ __align__(16) float buf[2][256];
    __shared__ float red[64];
    int m = blockIdx.x, t = threadIdx.x;
    const float* row = x + (size_t)m * K;
    int chunks = (K + 255) / 256;
    float acc = 0.f;
    for (int c = 0; c < chunks + 1; ++c) {
        if (c < chunks) {                              // issue chunk c into stage c % 2
            int k = c * 256 + t * 4;
            if (k < K) cp16(&buf[c % 2][t * 4], row + k);
            else { buf[c % 2][t * 4] = 0.f; buf[c % 2][t * 4 + 1] = 0.f; buf[c % 2][t * 4 + 2] = 0.f; buf[c % 2][t * 4 + 3] = 0.f; }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
        if (c > 0) {                                   // consume chunk c - 1
            asm volatile("cp.async.wait_group 1;" ::: "memory");
            __syncthreads();
            for (int j = t; j < 256; j += 64) acc += buf[(c - 1) % 2][j];
        }
        __syncthreads();
    }
    red[t] = acc;
    __syncthreads();
    if (t == 0) { float s = 0.f; for (int j = 0; j < 64; ++j) s += red[j]; out[m] = s; }
}
