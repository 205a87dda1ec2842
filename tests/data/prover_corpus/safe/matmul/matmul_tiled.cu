extern "C" __global__ void matmul_tiled(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int M, int N, int K) {
    __shared__ float As[16][16], Bs[16][16];
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    float acc = 0.f;
    for (int t = 0; t < K; t += 16) {
        As[threadIdx.y][threadIdx.x] = (row < M && t + threadIdx.x < K) ? a[row * K + t + threadIdx.x] : 0.f;
        Bs[threadIdx.y][threadIdx.x] = (col < N && t + threadIdx.y < K) ? b[(t + threadIdx.y) * N + col] : 0.f;
        __syncthreads();
        for (int i = 0; i < 16; i++) acc += As[threadIdx.y][i] * Bs[i][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) c[row * N + col] = acc;
}
