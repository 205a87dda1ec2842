// One block per row: the row's float4 chunks, then its scalar tail. The float4 cast of x + row * D is
// 16-byte aligned only when D % 4 == 0 (row 1 of D = 6 starts at byte 24).
extern "C" __global__ void row_scale_f4(const float* __restrict__ x, float* __restrict__ out, float alpha, int D) {
    int row = blockIdx.x;
    const float* xr = x + (size_t)row * D;
    float* yr = out + (size_t)row * D;
    int n4 = D / 4;
    for (int i = threadIdx.x; i < n4; i += blockDim.x) {
        float4 v = reinterpret_cast<const float4*>(xr)[i];
        v.x *= alpha; v.y *= alpha; v.z *= alpha; v.w *= alpha;
        reinterpret_cast<float4*>(yr)[i] = v;
    }
    for (int i = 4 * n4 + threadIdx.x; i < D; i += blockDim.x) yr[i] = alpha * xr[i];
}
