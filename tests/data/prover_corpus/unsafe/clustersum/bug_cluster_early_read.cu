// A cluster of 8 blocks (one cluster: grid 8): block r sums x[j, h] over j = r, r + 8, .. below n into
// its shared part[h]; the cluster barrier (arrive.release / wait.acquire) orders those writes before
// rank 0 reads every block's part through mapa + ld.shared::cluster. BUG: the first barrier comes after rank 0's reads,
// which race with the other blocks' writes of part.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ float ld_rank(const float* p, unsigned rank) {
    unsigned a = (unsigned)__cvta_generic_to_shared(p), ra;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(ra) : "memory");
    return v;
}
extern "C" __global__ void __cluster_dims__(8, 1, 1) bug_cluster_early_read(const int* __restrict__ n_ptr,
                                                                 const float* __restrict__ x, float* out, int H) {
    __shared__ float part[64];
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    const int h = threadIdx.x, n = n_ptr[0];
    float s = 0.f;
    if (h < H) {
#pragma unroll 1
        for (int j = (int)r; j < n; j += 8) s += x[(long long)j * H + h];
        part[h] = s;
    }
    if (r == 0 && h < H) {
        float t = 0.f;
#pragma unroll
        for (unsigned q = 0; q < 8; q++) t += ld_rank(&part[h], q);
        out[h] = t;
    }
    cluster_sync();
    cluster_sync();
}
