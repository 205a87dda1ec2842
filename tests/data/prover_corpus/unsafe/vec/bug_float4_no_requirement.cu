extern "C" __global__ void bug_float4_no_requirement(const float4* __restrict__ a, const float4* __restrict__ b, float4* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (4 * i < n) { float4 x = a[i], y = b[i]; out[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w); }
}
