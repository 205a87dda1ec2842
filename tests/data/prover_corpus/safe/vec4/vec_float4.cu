extern "C" __global__ void vec_float4(const float4* __restrict__ a, const float4* __restrict__ b, float4* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 4) { float4 x = a[i], y = b[i]; out[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w); }
}
