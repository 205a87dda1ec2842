"""`kreg submit` of kernels as generators write them (tests/data/intake/): a KernelBench load_inline file,
a templated load_inline file built from string constants with a second kernel, a .cu with a pybind11
binding and a .cu with a TVM-FFI binding. Each is reduced to its device code (what was dropped is
listed), its template entry instantiated, compiled by NVRTC, and accepted as safe with the prover on.
A Python file is never run; sources kreg cannot read without running them are refused with a sentence."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kreg.registry.cxxscan import mask
from kreg.registry.intake import IntakeError, take
from kreg.registry.source_policy import source_problem

from helpers.paths import DATA

FORMS = DATA / "intake"
COMMON = DATA / "hostile" / "_common"
EXPECTED = {   # fixture -> (form, PTX entry, things that must be listed as dropped)
    "kb_add_load_inline": ("load_inline", "elementwise_add_kernel",
                           ["cpp_sources", "#include <torch/extension.h>", "host function elementwise_add_cuda"]),
    "kb_add_template": ("load_inline", "add_kernel_float_256",
                        ["#include <ATen/cuda/CUDAContext.h>", "using namespace torch", "#define CHECK_CUDA",
                         "kernel scale_kernel (not an entry the YAML names)", "host function add_cuda"]),
    "pybind_add": ("cuda+binding", "vec_add",
                   ["#include <pybind11/pybind11.h>", "binding block PYBIND11_MODULE", "host function vec_add_forward",
                    "declaration of kernel vec_add", "namespace py = pybind11"]),
    "tvm_ffi_add": ("cuda+binding", "add_vec_4",
                    ["#include <tvm/ffi/function.h>", "binding block TVM_FFI_DLL_EXPORT_TYPED_FUNC",
                     "host function add_launch"]),
}


def _fixture(name: str) -> tuple[str, dict, str]:
    data = yaml.safe_load((FORMS / f"{name}.yaml").read_text())
    return (FORMS / data["source"]).read_text(), data, data["source"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_form_is_reduced_to_device_code_that_compiles(name):
    from kreg.checker.ptx.compile import compile_cuda
    text, data, filename = _fixture(name)
    got = take(text, data, filename)
    form, entry, dropped = EXPECTED[name]
    assert got.form == form and got.data["entry"] == entry
    listed = "\n".join(got.dropped)
    for d in dropped:
        assert d in listed, f"{d!r} not in:\n{listed}"
    assert not re.search(r"\btorch\b|pybind11|tvm::|<<<", mask(got.source)[0])      # no host code left
    assert source_problem(got.source) is None
    ptx = compile_cuda(got.source, f"{name}.cu", use_cache=False).ptx
    assert re.findall(r"\.entry\s+(\w+)", ptx) == [entry]       # the other kernel is gone, the entry named


def test_generated_files_are_accepted_as_safe_through_the_cli(tmp_path):
    home = tmp_path / "home"
    shutil.copytree(COMMON / "kernels", home / "kernels")
    env = dict(os.environ, KREG_HOME=str(home), KREG_PROVER_MEMORY_MB="2048")
    p = subprocess.run([sys.executable, "-m", "kreg.cli", "submit", str(FORMS), "--json", "--jobs", "2"], env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    subs = {s["name"]: s for s in json.loads(p.stdout)["submissions"]}
    assert set(subs) == set(EXPECTED)
    for name, s in subs.items():
        assert s["accepted_as"] == "safe" and set(s["proofs"].values()) == {"proven"}, (name, s["why"], s["reasons"])
        assert s["intake"]["form"] == EXPECTED[name][0] and s["intake"]["dropped"]
        entered = Path(s["installed"])
        assert yaml.safe_load(entered.read_text())["entry"] == EXPECTED[name][1]
        assert entered.with_suffix(".cu").read_text().startswith("// Device code extracted by kreg submit")
    table = subprocess.run([sys.executable, "-m", "kreg.cli", "submit", str(FORMS / "pybind_add.cu")], env=env,
                           capture_output=True, text=True, timeout=300)
    assert table.returncode == 0, table.stdout[-3000:]
    assert "intake (cuda+binding): dropped lines 33-35: binding block PYBIND11_MODULE" in table.stdout


def test_a_python_file_is_read_never_run(tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    src = (FORMS / "kb_add_load_inline.py").read_text()
    (tmp_path / "k.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\nraise SystemExit(3)\n" + src)
    data = yaml.safe_load((FORMS / "kb_add_load_inline.yaml").read_text()) | {"name": "k", "source": "k.py"}
    (tmp_path / "k.yaml").write_text(yaml.safe_dump(data))
    home = tmp_path / "home"
    shutil.copytree(COMMON / "kernels", home / "kernels")
    monkeypatch.setenv("KREG_HOME", str(home))
    from kreg.pipeline import Options
    from kreg.submit import submit
    s = submit(tmp_path / "k.py", tmp_path / "k.yaml", opts=Options(prove=False))
    assert s.decision == "unsafe" and s.accepted and not marker.exists()


REFUSED = {
    "an f-string": ('from torch.utils.cpp_extension import load_inline\nK = "k"\n'
                    'src = f"__global__ void {K}(float* x) {{}}"\nload_inline(name="x", cpp_sources="", cuda_sources=src)\n',
                    "k", "is an f-string, computed when the file runs"),
    "a name bound twice": ('from torch.utils.cpp_extension import load_inline\nsrc = "__global__ void k(float* x) {}"\n'
                           'src = src.replace("x", "y")\nload_inline(name="x", cpp_sources="", cuda_sources=src)\n',
                           "k", "bound more than once"),
    "no load_inline call": ('import torch\nsrc = "__global__ void k(float* x) {}"\n', "k", "no torch.utils.cpp_extension.load_inline call"),
    "a template without its arguments": ('from torch.utils.cpp_extension import load_inline\n'
                                         'load_inline(name="x", cpp_sources="", cuda_sources="template <int B> '
                                         '__global__ void k(float* x) { x[B] = 0; }")\n',
                                         "k", "is a template: name its instantiation in the YAML, e.g. `entry: k<B>`"),
    "a missing entry": ('from torch.utils.cpp_extension import load_inline\n'
                        'load_inline(name="x", cpp_sources="", cuda_sources="__global__ void j(float* x) {}")\n',
                        "k", "no load_inline call's cuda_sources defines k"),
    "an overloaded entry": ('from torch.utils.cpp_extension import load_inline\nload_inline(name="x", cpp_sources="", '
                            'cuda_sources="__global__ void k(float* x) {}\\n__global__ void k(int* x) {}")\n',
                            "k", "2 __global__ definitions of that name"),
    "arguments for a plain kernel": ('from torch.utils.cpp_extension import load_inline\nload_inline(name="x", '
                                     'cpp_sources="", cuda_sources="__global__ void k(float* x) {}")\n',
                                     "k<float>", "k is not a template; name it without arguments"),
}


@pytest.mark.parametrize("what", sorted(REFUSED))
def test_sources_kreg_cannot_read_without_running_them_are_refused(what):
    text, entry, sentence = REFUSED[what]
    with pytest.raises(IntakeError) as e:
        take(text, {"entry": entry}, "gen.py")
    assert sentence in str(e.value)


def test_a_clean_cu_is_taken_byte_for_byte():
    text = (COMMON / "src" / "hadd_ok.cu").read_text()
    got = take(text, {"entry": "hadd"}, "hadd_ok.cu")
    assert got.form == "cuda" and got.source == text and not got.dropped


def test_comments_strings_and_preprocessor_lines_do_not_confuse_the_scanner():
    text = ('#include <torch/extension.h>\n#define OPEN {\n/* } ; __global__ void fake(int*) { */\n'
            'const char* s = "}; {";  // }\n#if 1\n__device__ int twice(int x) { return 2 * x; }\n#endif\n'
            'extern "C" __global__ void k(int* x) { x[0] = twice(\'}\'); }\n'
            'int host_only(int a) { return a; }\n')
    got = take(text, {"entry": "k"}, "t.cu")
    assert [d.split(": ", 1)[1] for d in got.dropped] == ["#include <torch/extension.h> (a framework or host header)",
                                                         "host function host_only"]
    assert "twice" in got.source and "#if 1" in got.source and "const char* s" in got.source


def test_standard_headers_generated_code_includes_are_accepted_and_compile():
    from kreg.checker.ptx.compile import compile_cuda
    src = ('#include <stdint.h>\n#include <cstdint>\n#include <cfloat>\n#include <climits>\n#include <float.h>\n'
           '#include <limits.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n'
           'extern "C" __global__ void k(float* x, int64_t n, std::uint32_t m) {\n'
           '    if ((int64_t)threadIdx.x < n && m < UINT32_MAX) x[threadIdx.x] = FLT_MAX - (float)INT_MAX;\n}\n')
    assert source_problem(src) is None
    assert ".entry k" in compile_cuda(src, use_cache=False).ptx
    assert source_problem('#include <mma.h>\n') is None         # NVRTC needs crt/mma.h (nvidia-cuda-crt) to compile it


def test_a_param_named_like_a_dim_is_the_dim(tmp_path):
    from kreg.registry.schema import SchemaError, load_op
    op = (COMMON / "kernels" / "ops" / "hadd.yaml").read_text()
    (tmp_path / "ok.yaml").write_text(op.replace("params:\n", "params:\n  N: {role: scalar, dtype: i32}\n"))
    assert "N" not in load_op(tmp_path / "ok.yaml").params and "N" in load_op(tmp_path / "ok.yaml").dims
    (tmp_path / "bad.yaml").write_text(op.replace("params:\n", "params:\n  N: {role: in, dtype: T, shape: [N]}\n"))
    with pytest.raises(SchemaError, match="must be an integer scalar"):
        load_op(tmp_path / "bad.yaml")
