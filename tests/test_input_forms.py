"""Every form of kernel input compiles the same JAX kernel to the same program: HLO text,
an XLA dump file, StableHLO text, a serialized HloModuleProto, a jax Lowered, a function."""
import pathlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import pytest

from runtime_skeleton.compile import CompileOptions, compile_hlo, compile_jax
from runtime_skeleton.errors import HloError
from runtime_skeleton.hlo import kernel_module, parse_file

ROOT = pathlib.Path(__file__).resolve().parent.parent
OPTS = CompileOptions(timeout=20, deterministic=True)


def _kernel(a, b):
    return jnp.dot(a, b, preferred_element_type=jnp.int32) + 1


ARGS = (jax.ShapeDtypeStruct((16, 16), jnp.int8), jax.ShapeDtypeStruct((16, 16), jnp.int8))
DEBUG_TABLES = """
FileNames
1 "/home/user/model.py"

FunctionNames
1 "<module>"
2 "_kernel"

FileLocations
1 {file_name_id=1 function_name_id=1 line=4 end_line=4 column=4 end_column=26}
2 {file_name_id=1 function_name_id=2 line=2 end_line=2 column=20 end_column=71}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=2}

"""


@pytest.fixture(scope="module")
def forms(tmp_path_factory):
    from jax._src.lib import _jax

    d = tmp_path_factory.mktemp("forms")
    lowered = jax.jit(_kernel).lower(*ARGS)
    hlo, mlir = lowered.as_text(dialect="hlo"), lowered.as_text()
    proto = _jax.mlir.mlir_module_to_xla_computation(mlir, use_tuple_args=False,
                                                     return_tuple=False).as_serialized_hlo_module_proto()
    header, rest = hlo.split("\n", 1)
    (d / "k.hlo").write_text(hlo)
    (d / "k.mlir").write_text(mlir)
    (d / "k.pb").write_bytes(proto)
    (d / "dump.txt").write_text(header + "\n" + DEBUG_TABLES + rest)  # as --xla_dump_to writes it
    return d, lowered, mlir, proto


def test_every_form_compiles_to_the_same_program(forms):
    from generated import gemmini

    d, lowered, mlir, proto = forms
    programs = {
        "hlo file": compile_hlo(gemmini.TARGET, d / "k.hlo", OPTS),
        "dump file": compile_hlo(gemmini.TARGET, d / "dump.txt", OPTS),
        "mlir file": compile_hlo(gemmini.TARGET, d / "k.mlir", OPTS),
        "proto file": compile_hlo(gemmini.TARGET, d / "k.pb", OPTS),
        "mlir text": compile_hlo(gemmini.TARGET, mlir, OPTS),
        "proto bytes": compile_hlo(gemmini.TARGET, proto, OPTS),
        "lowered": compile_hlo(gemmini.TARGET, lowered, OPTS),
        "function": compile_jax(gemmini.TARGET, _kernel, *ARGS, opts=OPTS),
        "generated package": gemmini.compile_jax(_kernel, *ARGS, opts=OPTS),
    }
    texts = {name: r.text for name, r in programs.items()}
    assert len(set(texts.values())) == 1, texts
    assert gemmini.verify(programs["function"]) == []


def test_a_str_is_text_never_a_path(forms):
    d = forms[0]
    with pytest.raises(HloError, match=r"pass pathlib.Path"):
        compile_hlo(None, str(d / "k.hlo"))
    assert kernel_module(d / "k.hlo").name == kernel_module((d / "k.hlo").read_text()).name


def test_bad_forms_are_located_errors(tmp_path):
    bad_mlir = tmp_path / "bad.mlir"
    bad_mlir.write_text("module @m {\n  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                        "    %0 = stablehlo.bogus %a : tensor<4xf32>\n    return %0 : tensor<4xf32>\n  }\n}\n")
    with pytest.raises(HloError, match="not valid StableHLO/MHLO: custom op 'stablehlo.bogus'") as e:
        parse_file(bad_mlir)
    assert (e.value.loc.line, e.value.loc.col) == (3, 10)
    garbage = tmp_path / "bad.pb"
    garbage.write_bytes(b"\n\x05hello\x00\x01\x02garbage")
    with pytest.raises(HloError, match="not a serialized HloModuleProto"):
        parse_file(garbage)
    with pytest.raises(HloError, match="protobuf text format is not read"):
        kernel_module('name: "m"\nentry_computation_name: "main"\n')
    with pytest.raises(HloError, match="give its example arguments"):
        kernel_module(_kernel)
    with pytest.raises(HloError, match="cannot read a kernel from int"):
        kernel_module(3)


def test_the_command_line_reads_standard_input_and_writes_standard_output(forms):
    d = forms[0]
    r = subprocess.run([sys.executable, "-m", "generated.gemmini", "compile", "-", "-o", "-", "--deterministic"],
                       input=(d / "k.mlir").read_bytes(), capture_output=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().startswith(".target gemmini") and b"instructions, cost" in r.stderr


def test_an_optimized_dump_with_fusions_is_read_as_calls():
    from runtime_skeleton.reference import evaluate
    from runtime_skeleton.reference.npz_io import random_inputs

    fused = """HloModule jit_f, is_scheduled=true

%fused_computation (param_0: s32[16], param_1: s32[16]) -> s32[16] {
  %param_0 = s32[16]{0} parameter(0)
  %param_1 = s32[16]{0} parameter(1)
  ROOT %add.0 = s32[16]{0} add(%param_0, %param_1)
}

ENTRY %main.1 (a.1: s32[16], b.1: s32[16]) -> s32[16] {
  %a.1 = s32[16]{0} parameter(0)
  %b.1 = s32[16]{0} parameter(1)
  ROOT %add_fusion = s32[16]{0} fusion(%a.1, %b.1), kind=kLoop, calls=%fused_computation
}
"""
    module = kernel_module(fused)
    x = random_inputs([p.type for p in module.entry_computation.parameters], 0)
    assert (evaluate(module, x)[0] == x[0] + x[1]).all()
