extern "C" __global__ void bug_pdl_store_before_wait(const float* x, float* y, int n) {
    // misused PDL: the kernel marks its input consumed (writes it) before griddepcontrol.wait,
    // while the previous kernel may still be writing it
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    if (i < n) ((float*)x)[i] = 0.0f;
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (i < n) y[i] = 2.0f * x[i];
}
