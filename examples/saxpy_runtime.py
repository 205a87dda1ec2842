"""saxpy through kreg.runtime: compile CUDA C++ to PTX (NVRTC), load the exact bytes (sha256 checked),
allocate, launch, check; then the same launch captured in a graph and replayed on new inputs.

    python examples/saxpy_runtime.py [--device cpu|gpu] [--n N]
"""
import argparse

import numpy as np

from kreg import runtime
from kreg.checker.ptx.compile import compile_cuda

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--n", type=int, default=1000)
    args = ap.parse_args(argv)
    n = args.n

    ptx = compile_cuda(SOURCE, "saxpy.cu")
    dev = runtime.device(args.device)
    saxpy = dev.load(ptx.ptx, sha256=ptx.sha256).kernel("saxpy")
    x, y, out = (dev.alloc(4 * n) for _ in range(3))
    cfg = runtime.LaunchConfig(grid=(n + 127) // 128, block=128)
    rng = np.random.default_rng(0)

    def fresh_inputs():
        hx, hy = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
        x.copy_from(hx)
        y.copy_from(hy)
        return hx, hy

    def check(a, hx, hy):
        got, want = out.copy_to().view(np.float32), np.float32(a) * hx + hy
        assert np.allclose(got, want, rtol=1e-6, atol=1e-6), f"max error {np.max(np.abs(got - want))}"

    stream = dev.stream()
    hx, hy = fresh_inputs()
    saxpy.launch(cfg, np.float32(2.0), x, y, out, np.int32(n), stream=stream)
    stream.sync()
    check(2.0, hx, hy)

    graph = dev.capture(lambda s: saxpy.launch(cfg, np.float32(3.0), x, y, out, np.int32(n), stream=s))
    for _ in range(2):                 # new inputs in the same buffers give new outputs
        hx, hy = fresh_inputs()
        graph.replay(stream)
        stream.sync()
        check(3.0, hx, hy)
    print(f"saxpy n={n} on {dev.describe()}: launch and graph replay OK (PTX sha256 {ptx.sha256[:12]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
