// Data-dependent while loops with continue/break: Collatz step counts.
extern "C" __global__ void collatz_while(const unsigned* a, unsigned* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = a[i] % 1000u + 1u, steps = 0;
    while (x != 1u) {
        steps++;
        if (steps > 500) break;
        if (x & 1u) { x = 3u * x + 1u; continue; }
        x >>= 1;
    }
    out[i] = steps;
}
