// A per-thread array indexed by data (local memory), insertion sort of 8 values.
extern "C" __global__ void local_array(const int* a, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v[8];
    for (int k = 0; k < 8; k++) v[k] = a[8 * i + k];
    for (int k = 1; k < 8; k++) {
        int x = v[k], j = k - 1;
        while (j >= 0 && v[j] > x) { v[j + 1] = v[j]; j--; }
        v[j + 1] = x;
    }
    int idx = a[8 * i] & 7;
    for (int k = 0; k < 8; k++) out[9 * i + k] = v[k];
    out[9 * i + 8] = v[idx];
}
