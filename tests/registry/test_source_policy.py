"""The source policy (item b): sources over 1 MiB and includes other than the kreg headers and the
CUDA headers are refused, at load and at compile time, without echoing the refused path."""
import pytest

from kreg.checker.ptx.compile import SourceRefused, compile_cuda
from kreg.registry.source_policy import OUTSIDE, source_problem
from kreg.registry.catalog import BUILTIN
from kreg.registry.limits import SOURCE_MAX_BYTES
from kreg.registry.schema import SchemaError, load_op, load_variant

from helpers.paths import DATA

BODY = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n'
ALLOWED = ['#include "kreg_own.cuh"', "#include <cuda_bf16.h>", "#include <cuda_fp16.h>", "#include <cuda_pipeline.h>",
           "#include <cooperative_groups.h>", '#include "kreg_rope.cuh" // the rope tables',
           "// #include </etc/passwd>", "/* #include </etc/passwd> */", 'const char* s = "#include </etc/passwd>";']
REFUSED = ['#include "/etc/passwd"', "#include </etc/passwd>", '#include "../include/kreg_own.cuh"',
           "#include <cuda_fp16.h/../../../etc/passwd>", "#include <./cuda_fp16.h>", "#include <stdio.h>",
           '#include "kernel_helper.h"', "#include SECRET", "#/**/include </etc/passwd>",
           "#/*\n*/include </etc/passwd>", "#inc\\\nlude </etc/passwd>", "%:include </etc/passwd>",
           "  #  include_next <cuda_fp16.h/../x>", "#import </etc/passwd>",
           '#if __has_include("/etc/passwd")\n#endif', 'const char* s = "/*";\n#include </etc/passwd>\n// */',
           'auto s = fooLR"(\n#include </etc/passwd>\n)";', '#include "kreg_own.cuh" "/etc/passwd"']


@pytest.mark.parametrize("line", ALLOWED)
def test_allowed_includes(line):
    assert source_problem(line + "\n" + BODY) is None


@pytest.mark.parametrize("line", REFUSED)
def test_refused_includes_say_why_without_echoing_the_path(line):
    why = source_problem(BODY + line + "\n" + BODY)
    first = min(i for i in (line.find("#"), line.find("%:")) if i >= 0)
    assert why == f"line {2 + line[:first].count(chr(10))}: {OUTSIDE}"
    assert "passwd" not in why and "../" not in why


def test_size_limit_and_nul():
    assert "larger than 1048576 bytes" in source_problem(BODY + "//" + "x" * SOURCE_MAX_BYTES)
    assert "NUL" in source_problem(BODY + "\0")


def test_compile_refuses_before_nvrtc_sees_the_source():
    with pytest.raises(SourceRefused) as e:
        compile_cuda('#include "/etc/passwd"\n' + BODY, "evil.cu", use_cache=False)
    assert "refused to compile evil.cu: line 1: an include outside the kreg headers" in str(e.value)
    assert "/etc/passwd" not in str(e.value)


def _variant(tmp_path, source_text=None, link=None):
    text = (BUILTIN / "safe" / "add" / "add_bf16.yaml").read_text()
    if link:
        (tmp_path / "add_bf16.cu").symlink_to(link)
    else:
        (tmp_path / "add_bf16.cu").write_text(source_text)
    (tmp_path / "v.yaml").write_text(text)
    return load_variant(tmp_path / "v.yaml", {"add": load_op(BUILTIN / "ops" / "add.yaml")})


def test_load_refuses_a_bad_include_naming_the_file(tmp_path):
    good = (BUILTIN / "safe" / "add" / "add_bf16.cu").read_text()
    assert _variant(tmp_path, good).name == "add_bf16_safe"
    (tmp_path / "x").mkdir()
    with pytest.raises(SchemaError) as e:
        _variant(tmp_path / "x", '#include "/etc/shadow"\n' + good)
    assert "v.yaml: source: refused: line 1: an include outside the kreg headers" in str(e.value)
    assert "shadow" not in str(e.value)


def test_load_refuses_an_oversized_source(tmp_path):
    with pytest.raises(SchemaError, match="source: refused: source larger than 1048576 bytes"):
        _variant(tmp_path, BODY + "//" + "x" * SOURCE_MAX_BYTES)


def test_load_refuses_a_symlinked_source(tmp_path):
    with pytest.raises(SchemaError, match="not a symbolic link"):
        _variant(tmp_path, link="/etc/passwd")


def test_every_registry_and_corpus_source_passes():
    root = DATA
    files = list(BUILTIN.glob("*/*/*.cu")) + list(root.glob("**/*.cu"))
    bad = {str(f): source_problem(f.read_text()) for f in files   # tests/data/intake: framework sources before intake
           if not f.is_relative_to(root / "hostile") and not f.is_relative_to(root / "intake")}
    assert len(bad) > 60 and not {f: w for f, w in bad.items() if w}


def test_a_huge_compile_log_is_cut():
    from kreg.checker.ptx.compile import CompileError
    bad = 'extern "C" __global__ void k() {\n' + "".join(f"undefined_{i}_{'x' * 300}();\n" for i in range(300)) + "}\n"
    with pytest.raises(CompileError) as e:
        compile_cuda(bad, "noisy.cu", use_cache=False)
    assert len(str(e.value)) < 21_000 and "more characters)" in str(e.value)


def test_a_kernels_identity_takes_only_the_kreg_headers_it_can_include():
    from kreg.registry.catalog import include_bytes
    from kreg.registry.source_policy import KREG_INCLUDE_DIR, kreg_headers, kreg_includes
    assert kreg_includes("__global__ void k() {}") == frozenset() and include_bytes("__global__ void k() {}") == b""
    # through each other: every header a kreg header includes comes along
    for h in kreg_headers():
        got = kreg_includes(f'#include "{h}"\n')
        inner = {m for m in kreg_headers() if f'"{m}"' in (KREG_INCLUDE_DIR / h).read_text()}
        assert h in got and inner <= got
    own = kreg_includes('#include <cuda_bf16.h>\n#include "kreg_own.cuh"\n')
    assert "kreg_own.cuh" in own and include_bytes('#include "kreg_own.cuh"\n').startswith(b"kreg_own.cuh")
    assert len(kreg_headers()) > len(own)            # the others are not part of this kernel's identity
    # a source the policy refuses: its includes are not known, every header counts
    assert kreg_includes('#include "/etc/passwd"\n') is None
    assert include_bytes('#include "/etc/passwd"\n') == include_bytes()
