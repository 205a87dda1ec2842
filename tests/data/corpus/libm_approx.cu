// libm functions that use approximate hardware instructions inside (ex2/lg2/rcp .approx): expf, tanhf,
// powf, exp10f, log2f, SiLU and GELU(tanh) as inference kernels write them.
extern "C" __global__ void libm_approx(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = x[i];
    float* o = out + 7 * i;
    o[0] = expf(a);
    o[1] = tanhf(a);
    o[2] = powf(fabsf(a) + 0.5f, 1.7f);
    o[3] = exp10f(a * 0.3f);
    o[4] = log2f(fabsf(a) + 0.25f);
    o[5] = a / (1.0f + expf(-a));
    o[6] = 0.5f * a * (1.0f + tanhf(0.7978845608f * (a + 0.044715f * a * a * a)));
}
