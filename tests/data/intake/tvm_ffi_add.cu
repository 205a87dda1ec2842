// A .cu with a TVM-FFI host binding (FlashInfer-Bench style): the kernel, a host launcher taking
// DLTensors, and the export macro.
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>
#include <cuda_runtime.h>
#include <cstdint>

using tvm::ffi::TensorView;

template <int VEC>
__global__ void add_vec(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                        uint32_t n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < VEC; ++k) {
        uint32_t j = i * VEC + k;
        if (j < n) out[j] = a[j] + b[j];
    }
}

void add_launch(TensorView a, TensorView b, TensorView out) {
    uint32_t n = static_cast<uint32_t>(a.size(0));
    cudaStream_t stream = 0;
    add_vec<1><<<(n + 255) / 256, 256, 0, stream>>>(static_cast<float*>(a.data_ptr()),
        static_cast<float*>(b.data_ptr()), static_cast<float*>(out.data_ptr()), n);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(add, add_launch);
