// float4 / int2 / uint4 vector loads and stores, __ldg and a bf16x2 reinterpretation.
#include <cuda_bf16.h>
extern "C" __global__ void vector_loads(const float4* a, const int2* b, const uint4* c, float4* oa, int2* ob, uint4* oc, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float4 x = __ldg(&a[i]);
    oa[i] = make_float4(x.w, x.z * 2.f, x.y + x.x, x.x);
    int2 y = b[i];
    ob[i] = make_int2(y.x + y.y, y.x - y.y);
    uint4 z = c[i];
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&z);
    uint4 r;
    __nv_bfloat162* hr = reinterpret_cast<__nv_bfloat162*>(&r);
    for (int k = 0; k < 4; k++) hr[k] = __hmul2(h[k], h[(k + 1) & 3]);
    oc[i] = r;
}
