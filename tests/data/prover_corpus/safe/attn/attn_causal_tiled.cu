// Causal key tiles staged in shared memory: the block's 32 queries scan key tiles up to the tile's last
// position (start + its last query); a barrier after filling the tile and one before refilling it.
extern "C" __global__ void attn_causal_tiled(const float* __restrict__ q, const float* __restrict__ k,
                                             float* __restrict__ out, int T, int S, int start) {
    __shared__ float ks[32][33];
    const int t = blockIdx.x * 32 + threadIdx.x;
    const int n_keys = start + min(blockIdx.x * 32 + 32, T);
    float best = -1e30f;
    for (int key0 = 0; key0 < n_keys; key0 += 32) {
        for (int i = threadIdx.x; i < 32 * 32; i += 32) {
            int r = i / 32, c = i % 32;
            ks[r][c] = key0 + r < n_keys ? k[(key0 + r) * 32 + c] : 0.f;
        }
        __syncthreads();
        if (t < T)
            for (int j = 0; j < 32 && key0 + j <= start + t; j++) {
                float s = 0.f;
                for (int c = 0; c < 32; c++) s += q[t * 32 + c] * ks[j][c];
                best = fmaxf(best, s);
            }
        __syncthreads();
    }
    if (t < T) out[t] = best;
}
