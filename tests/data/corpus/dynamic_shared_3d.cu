// Dynamic (extern) shared memory with a 3-D block and 3-D grid; neighbours read after a barrier.
extern "C" __global__ void dynamic_shared_3d(const int* a, int* out) {
    extern __shared__ int buf[];
    int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int nt = blockDim.x * blockDim.y * blockDim.z;
    int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    buf[t] = a[b * nt + t];
    buf[nt + t] = t * 3 + b;
    __syncthreads();
    out[b * nt + t] = buf[(t + 1) % nt] - buf[nt + (nt - 1 - t)] + (int)threadIdx.z * 100 + (int)blockIdx.y;
}
