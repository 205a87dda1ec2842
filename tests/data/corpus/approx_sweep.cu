// Each approximate instruction alone (inline PTX) over a sweep of inputs, one output buffer each, to
// measure how far the emulator's correctly rounded stand-ins are from the hardware's approximations.
#define UNARY(name, instr) __device__ __forceinline__ float name(float x) { float y; asm(instr " %0, %1;" : "=f"(y) : "f"(x)); return y; }
UNARY(ex2a, "ex2.approx.f32")
UNARY(ex2f, "ex2.approx.ftz.f32")
UNARY(lg2a, "lg2.approx.f32")
UNARY(sina, "sin.approx.f32")
UNARY(cosa, "cos.approx.f32")
UNARY(rsqa, "rsqrt.approx.f32")
UNARY(rcpa, "rcp.approx.f32")
UNARY(tanha, "tanh.approx.f32")
UNARY(sqra, "sqrt.approx.f32")
extern "C" __global__ void approx_sweep(const float* a, const float* b, float* ex2, float* ex2ftz, float* lg2, float* sn,
                                        float* cs, float* rsq, float* rcp, float* th, float* sq, float* dv, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i], y = b[i];
    ex2[i] = ex2a(x * 6.0f);
    ex2ftz[i] = ex2f(x * 6.0f);
    lg2[i] = lg2a(y);
    sn[i] = sina(x * 0.157f);
    cs[i] = cosa(x * 0.157f);
    rsq[i] = rsqa(y);
    rcp[i] = rcpa(y);
    th[i] = tanha(x * 0.2f);
    sq[i] = sqra(y);
    dv[i] = __fdividef(x, y);
}
