import pytest

from kreg.checker.ptx.compile import CompileError, DriverTooOld, check_driver_accepts, compile_cuda, ptx_isa_version
from kreg.registry.catalog import load_catalog


def test_every_registry_variant_compiles_to_isa_9_0():
    cat = load_catalog()
    assert not cat.errors, cat.errors
    assert cat.entries
    compiled = {}            # variants sharing a source and options (bf16 and f16 entries of one file): one compile
    for e in cat.kernels:
        v = e.variant
        key = (v.source_path.read_text(), v.source_path.name, tuple(v.options))
        if key not in compiled:
            compiled[key] = compile_cuda(*key, use_cache=False)
        c = compiled[key]
        assert f".entry {v.entry}(" in c.ptx
        assert ptx_isa_version(c.ptx) == (9, 0)
        assert ".target sm_90" in c.ptx


def test_same_source_same_ptx_and_cache():
    src = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] += 1.0f; }'
    a = compile_cuda(src, use_cache=True)
    b = compile_cuda(src, use_cache=True)
    assert a.sha256 == b.sha256 and b.cached
    assert compile_cuda(src, use_cache=False).sha256 == a.sha256


def test_half_headers_come_from_the_wheel():
    src = '#include <cuda_fp16.h>\n#include <cuda_bf16.h>\nextern "C" __global__ void k(__half* x, __nv_bfloat16* y)' \
          '{ x[0] = __float2half(1.f); y[0] = __float2bfloat16(2.f); }'
    assert "cvt.rn.bf16.f32" in compile_cuda(src, use_cache=False).ptx


def test_compile_error_carries_the_log():
    with pytest.raises(CompileError, match="undefined_thing"):
        compile_cuda('extern "C" __global__ void k() { undefined_thing(); }', "bad.cu", use_cache=False)


def test_driver_too_old_is_clear():
    ptx = ".version 9.5\n.target sm_90\n"
    with pytest.raises(DriverTooOld, match=r"ISA 9.5 but the CUDA 13.0 driver accepts ISA <= 9.0"):
        check_driver_accepts(ptx, 13000)
    check_driver_accepts(".version 9.0\n", 13000)
    with pytest.raises(DriverTooOld):
        check_driver_accepts(".version 9.0\n", 12080)


def test_compiling_leaves_python_s_shared_one_byte_objects_alone():
    # NVRTC writes its log (one NUL when empty) into the buffer it is given; a bytes object b" " * 1 is
    # CPython's shared b" ", and writing into it turned every later b" " in the process into b"\0".
    compile_cuda('extern "C" __global__ void quiet_kernel() {}', "quiet.cu", use_cache=False)
    s = b"a "
    assert s[1:] * 2 == bytes([32, 32])
