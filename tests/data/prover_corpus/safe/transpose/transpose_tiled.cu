extern "C" __global__ void transpose_tiled(const float* __restrict__ x, float* __restrict__ out, int M, int N) {
    __shared__ float tile[32][33];
    int c = blockIdx.x * 32 + threadIdx.x, r = blockIdx.y * 32 + threadIdx.y;
    if (r < M && c < N) tile[threadIdx.y][threadIdx.x] = x[r * N + c];
    __syncthreads();
    int oc = blockIdx.y * 32 + threadIdx.x, orow = blockIdx.x * 32 + threadIdx.y;
    if (orow < N && oc < M) out[orow * M + oc] = tile[threadIdx.x][threadIdx.y];
}
