"""A generated kernel for relu_sq, as a code generator writes it for PyTorch (KernelBench style): the
CUDA source is a string passed to load_inline. kreg reads this file as text and never runs it."""
import torch
from torch.utils.cpp_extension import load_inline

relu_sq_source = """
#include <torch/extension.h>

__global__ void relu_sq_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = fmaxf(x[i], 0.0f);
        y[i] = v * v;
    }
}

torch::Tensor relu_sq(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    relu_sq_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

relu_sq_ext = load_inline(name="relu_sq", cpp_sources="torch::Tensor relu_sq(torch::Tensor x);",
                          cuda_sources=relu_sq_source, functions=["relu_sq"])


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return relu_sq_ext.relu_sq(x)
