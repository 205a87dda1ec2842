// BUG: attn_causal_slabs without the barrier after the fill: the tile is read before the barrier that
// fills it, so a thread reads rows another thread of the block is still writing.
extern "C" __global__ void bug_attn_read_before_fill(const float* __restrict__ q, const float* __restrict__ k,
                                             float* __restrict__ out, int T, int S, int start) {
    __shared__ float4 ks[32][8];
    const int t = blockIdx.x * 32 + threadIdx.x, row = threadIdx.x / 8, c4 = threadIdx.x % 8;
    const int n_keys = start + min(blockIdx.x * 32 + 32, T);
    float best = -1e30f;
    int key0 = 0;
    do {
#pragma unroll 1
        for (int i = 0; i < 8; i++) {
            const int r = row + 4 * i;
            ks[r][c4] = key0 + r < n_keys ? reinterpret_cast<const float4*>(k)[(key0 + r) * 8 + c4]
                                          : make_float4(0.f, 0.f, 0.f, 0.f);
        }
        if (t < T)
            for (int j = 0; j < 32 && key0 + j <= start + t; j++) {
                float s = 0.f;
                for (int c = 0; c < 8; c++) {
                    float4 a = reinterpret_cast<const float4*>(q)[t * 8 + c], b = ks[j][c];
                    s += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
                }
                best = fmaxf(best, s);
            }
        __syncthreads();
        key0 += 32;
    } while (key0 < n_keys);
    if (t < T) out[t] = best;
}
