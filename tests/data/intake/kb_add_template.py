"""A generated load_inline file in the style of KernelBench leaderboard entries: the CUDA source is
built from two string constants (a header and a templated kernel with a warp-sized helper), a second
unused kernel shares the file, and the host wrapper dispatches on dtype. Read as text, never run."""
import torch
from torch.utils.cpp_extension import load_inline

header = r'''
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <stdint.h>
#include <cfloat>

#define CHECK_CUDA(x) TORCH_CHECK(x.device().is_cuda(), #x " must be a CUDA tensor")
using namespace torch;
'''

kernels = r'''
constexpr int kWarp = 32;

template <typename T>
__device__ __forceinline__ T add_one(T x, T y) { return x + y; }   // "}" in a comment: {

// the entry the YAML names: add<float, 256>
template <typename scalar_t, int BLOCK>
__global__ void __launch_bounds__(BLOCK) add_kernel(const scalar_t* __restrict__ a,
                                                    const scalar_t* __restrict__ b,
                                                    scalar_t* __restrict__ out, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
    if (i < n && FLT_MAX > 0.0f) out[i] = add_one(a[i], b[i]);
}

__global__ void scale_kernel(float* x, float s, int n) {   // not the entry: dropped
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

torch::Tensor add_cuda(torch::Tensor a, torch::Tensor b) {
    CHECK_CUDA(a);
    auto out = torch::empty_like(a);
    int64_t n = a.numel();
    auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "add_cuda", ([&] {
        add_kernel<scalar_t, 256><<<(n + 255) / 256, 256, 0, stream>>>(
            a.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n);
    }));
    return out;
}
'''

cuda_src = header + kernels
cpp_src = "torch::Tensor add_cuda(torch::Tensor a, torch::Tensor b);"

module = load_inline(name="add_tpl", cpp_sources=[cpp_src], cuda_sources=[cuda_src], functions=["add_cuda"],
                     extra_cuda_cflags=["-O3", "--use_fast_math"])
