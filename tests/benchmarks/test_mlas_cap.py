"""benchmarks/mlas_cap.py and benchmarks/avx512_use.py: the AVX2 class's OpenVINO copy keeps
MLAS off AVX-512, and the kernel's record says whether any AVX-512 ran.

Without them the AVX2 class's float32 OpenVINO timings ran AVX-512 in most of their
matrix products, which `OV_CPU_MAX_ISA` does not reach."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import avx512_use, mlas_cap

ROOT = Path(__file__).resolve().parents[2]

# test $0x10000,%r9d ; je -0x20 ; not %rdi ; mov %rdi,%rdx ; and $0xe0,%edx ; jne ...
_TEST = (b"\x41\xf7\xc1\x00\x00\x01\x00" + b"\x0f\x84" + (-0x20).to_bytes(4, "little",
                                                                           signed=True)
         + b"\x48\xf7\xd7\x48\x89\xfa\x81\xe2\xe0\x00\x00\x00\x0f\x85\x00\x00\x00\x00")


def test_the_avx512_test_jumps_where_its_no_branch_went_and_keeps_the_length():
    code = b"\x90" * 64 + _TEST + b"\xc3" * 16
    patched = mlas_cap.skip_avx512(code)
    at = 64 + 7
    assert len(patched) == len(code)
    assert patched[at] == 0xE9 and patched[at + 5] == 0x90
    was = at + 6 + int.from_bytes(code[at + 2:at + 6], "little", signed=True)
    now = at + 5 + int.from_bytes(patched[at + 1:at + 5], "little", signed=True)
    assert now == was
    assert patched[:at] == code[:at] and patched[at + 6:] == code[at + 6:]


@pytest.mark.parametrize("copies", [0, 2])
def test_the_test_must_be_found_exactly_once(copies):
    with pytest.raises(ValueError, match=f"found {copies} times"):
        mlas_cap.skip_avx512(b"\x90" * 8 + _TEST * copies)


def test_the_installed_openvino_holds_the_test_once():
    """A new OpenVINO build that moved it fails here, not silently in the benchmark."""
    openvino = pytest.importorskip("openvino")
    plugin = next(Path(openvino.__file__).parent.rglob(mlas_cap.PLUGIN))
    mlas_cap.skip_avx512(plugin.read_bytes())


# test $0x10000,%r10d ; je +0x0e ; mov %r8,%rax ; not %rax ; test $0xe0,%al ; je rel32
_ORT_TEST = (b"\x41\xf7\xc2\x00\x00\x01\x00\x74\x0e\x4c\x89\xc0\x48\xf7\xd0\xa8\xe0"
             b"\x0f\x84\x54\x01\x00\x00")


def test_onnxruntimes_branch_to_its_avx512_kernels_becomes_a_nop():
    code = b"\x90" * 16 + _ORT_TEST + b"\xc3" * 8
    patched = mlas_cap.skip_avx512_onnxruntime(code)
    assert len(patched) == len(code)
    assert patched[16 + 17:16 + 23] == mlas_cap.NOP6
    assert patched[:16 + 17] == code[:16 + 17] and patched[16 + 23:] == code[16 + 23:]
    with pytest.raises(ValueError, match="found 2 times"):
        mlas_cap.skip_avx512_onnxruntime(_ORT_TEST * 2)


def test_the_installed_onnxruntime_holds_the_test_once():
    onnxruntime = pytest.importorskip("onnxruntime")
    module = next(Path(onnxruntime.__file__).parent.rglob("onnxruntime_pybind11_state*.so"))
    mlas_cap.skip_avx512_onnxruntime(module.read_bytes())


_PRODUCT = """
import numpy as np, openvino as ov, openvino.opset13 as ops
from benchmarks import avx512_use
x = ops.parameter([-1, 384], np.float32)
w = ops.constant(np.random.default_rng(0).random((1536, 384), dtype=np.float32))
compiled = ov.Core().compile_model(ov.Model([ops.matmul(x, w, False, True)], [x]), "CPU")
request, a = compiled.create_infer_request(), np.ones((512, 384), np.float32)
request.infer([a])
print(avx512_use.share_in_use(lambda: [request.infer([a]) for _ in range(300)]))
"""


def _share(extra_path: str, program: str = _PRODUCT) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (extra_path, str(ROOT)) if p),
           "OV_CPU_MAX_ISA": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2",
           "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ"}
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                          text=True, check=True, timeout=300)
    return float(done.stdout.split()[-1])


_ORT_PRODUCT = """
import numpy as np, onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from benchmarks import avx512_use
w = numpy_helper.from_array(np.random.default_rng(0).random((384, 1536), dtype=np.float32), "w")
graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 384])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 1536])],
                          [w])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
a = np.ones((512, 384), np.float32)
session.run(None, {"x": a})
print(avx512_use.share_in_use(lambda: [session.run(None, {"x": a}) for _ in range(300)]))
"""


@pytest.mark.slow
def test_the_onnxruntime_copy_runs_its_products_without_avx512(tmp_path):
    pytest.importorskip("onnxruntime")
    if not avx512_use.available() or " avx512f" not in Path("/proc/cpuinfo").read_text():
        pytest.skip("this CPU has no AVX-512, so the kernel keeps no record of it")
    assert _share("", _ORT_PRODUCT) > 0.5
    assert _share(str(mlas_cap.capped_copy(tmp_path, "onnxruntime")), _ORT_PRODUCT) <= 0.05


@pytest.mark.slow
def test_the_copy_runs_openvinos_products_without_avx512_where_the_cap_alone_does_not(
        tmp_path):
    """A fully connected product compiled under `OV_CPU_MAX_ISA=AVX2` runs AVX-512 through
    most of its runs with the installed OpenVINO (MLAS reads CPUID) and none with the copy."""
    pytest.importorskip("openvino")
    flags = Path("/proc/cpuinfo").read_text()
    if not avx512_use.available() or " avx512f" not in flags:
        pytest.skip("this CPU has no AVX-512, so the kernel keeps no record of it")
    assert _share("") > 0.5
    assert _share(str(mlas_cap.capped_copy(tmp_path))) <= 0.05
