// Nested divergent branches and loops whose trip count depends on the thread.
extern "C" __global__ void divergence_nested(const int* a, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = a[i], acc = 0;
    if (v & 1) {
        for (int k = 0; k < (v & 15); k++) acc += k * v;
        if (v & 2) acc ^= 0x5555;
        else acc -= 77;
    } else if (v & 4) {
        int k = v & 31;
        while (k > 0) { acc += k; k -= 3; if (acc > 100) break; }
    } else {
        acc = v * 3;
    }
    out[i] = acc;
}
