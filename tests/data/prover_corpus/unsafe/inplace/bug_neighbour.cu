extern "C" __global__ void bug_neighbour(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i + 1 < n) x[i] = x[i] + x[i + 1];
}
