"""The generic pipeline on two tiny synthetic targets, apart from the shipped ones: `vec`, a pure
vector unit (8 registers of 16 int32 lanes, element-wise add, subtract, maximum and negate), and
`mat1`, a matrix unit whose operands and accumulator share one buffer of 64 rows of 16 int32.
Both are fixtures in tests/data/targets; each test generates the backend with actgen, compiles
small HLO kernels and verifies the programs on the simulator against the reference."""
import collections
import importlib.util
import pathlib
import time

import pytest

from generator.cli import main as actgen
from isa_lang.checker import check
from isa_lang.parser import parse_file
from runtime_skeleton.compile import CompileError, CompileOptions, compile_hlo, verify
from runtime_skeleton.refusal import UNSUPPORTED

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests/data/targets"
TIMEOUT = 15  # work-seconds per compilation; each kernel here needs about one


def _options(timeout: float = TIMEOUT) -> CompileOptions:
    return CompileOptions(timeout=timeout, deterministic=True)


@pytest.fixture(scope="module")
def gen(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny")
    for name in ("vec", "mat1"):
        assert actgen([str(FIXTURES / f"{name}.isa"), "-o", str(out / name)]) == 0
    return out


def _load(gen: pathlib.Path, name: str):
    spec = importlib.util.spec_from_file_location(f"tiny_{name}_target", gen / name / "target.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.TARGET


@pytest.fixture(scope="module")
def vec(gen):
    return _load(gen, "vec")


@pytest.fixture(scope="module")
def mat1(gen):
    return _load(gen, "mat1")


def _ops(res) -> collections.Counter:
    """The instructions the program executes, loops unrolled, by name."""
    return collections.Counter(i.name for i in res.program.flat())


def _compiled(target, hlo: str):
    res = compile_hlo(target, hlo, _options())
    assert verify(target, res) == []
    return res


# --- the fixtures themselves ---------------------------------------------------------------------

@pytest.mark.parametrize("name,buffers,instructions,in_place", [
    ("vec", 2, {"vld", "vst", "vadd", "vsub", "vmax", "vneg"}, set()),
    ("mat1", 2, {"ld", "st", "mm", "mma"}, {"mma"}),
], ids=["vec", "mat1"])
def test_the_fixtures_pass_the_checker(name, buffers, instructions, in_place, capsys):
    path = FIXTURES / f"{name}.isa"
    assert actgen(["check", str(path)]) == 0
    assert f"ok: target {name}, {buffers} buffers, {len(instructions)} instructions" in capsys.readouterr().out
    spec = check(parse_file(path))
    assert set(spec.instructions) == instructions
    assert {n for n, ins in spec.instructions.items() if ins.alias is not None} == in_place


# --- vec: element-wise kernels -------------------------------------------------------------------

ADD_16 = """HloModule add_16

ENTRY main {
  a = s32[16]{0} parameter(0)
  b = s32[16]{0} parameter(1)
  ROOT s = s32[16]{0} add(a, b)
}
"""

SUB_MAX_16 = """HloModule sub_max_16

ENTRY main {
  a = s32[16]{0} parameter(0)
  b = s32[16]{0} parameter(1)
  c = s32[16]{0} parameter(2)
  d = s32[16]{0} subtract(a, b)
  ROOT m = s32[16]{0} maximum(d, c)
}
"""

ADD_4X16 = """HloModule add_4x16

ENTRY main {
  a = s32[4,16]{1,0} parameter(0)
  b = s32[4,16]{1,0} parameter(1)
  ROOT s = s32[4,16]{1,0} add(a, b)
}
"""

MAX_NEG_64 = """HloModule max_neg_64

ENTRY main {
  a = s32[64]{0} parameter(0)
  b = s32[64]{0} parameter(1)
  n = s32[64]{0} negate(b)
  ROOT m = s32[64]{0} maximum(a, n)
}
"""

# 48 registers' worth of inputs on a machine of 8 registers
SUB_MAX_16X16 = SUB_MAX_16.replace("sub_max_16", "sub_max_16x16").replace("s32[16]{0}", "s32[16,16]{1,0}")


def test_vec_adds_one_register(vec):
    res = _compiled(vec, ADD_16)
    assert _ops(res) == {"vld": 2, "vadd": 1, "vst": 1}


def test_vec_chains_subtract_and_maximum(vec):
    res = _compiled(vec, SUB_MAX_16)
    assert _ops(res) == {"vld": 3, "vsub": 1, "vmax": 1, "vst": 1}


@pytest.mark.parametrize("hlo,op,rows", [(ADD_4X16, "vadd", 4), (MAX_NEG_64, "vmax", 4)], ids=["4x16", "64"])
def test_vec_computes_several_registers(vec, hlo, op, rows):
    ops = _ops(_compiled(vec, hlo))
    assert ops[op] == rows and ops["vst"] == rows and ops["vld"] == 2 * rows


def test_vec_computes_more_than_its_registers_hold(vec):
    """16 rows through 8 registers; each row's difference a vsub or a vneg and a vadd (in
    a loop over two rows a step, one of each is the cheaper schedule)."""
    res = _compiled(vec, SUB_MAX_16X16)
    ops = _ops(res)
    assert ops["vmax"] == ops["vst"] == 16 and ops["vld"] == 48
    assert ops["vsub"] + ops["vadd"] == 16 and ops["vneg"] == ops["vadd"]


POPCNT_16 = """HloModule popcnt_16

ENTRY main {
  a = s32[16]{0} parameter(0)
  b = s32[16]{0} parameter(1)
  s = s32[16]{0} add(a, b)
  ROOT p = s32[16]{0} popcnt(s)
}
"""

DOT_4X16 = """HloModule dot_4x16

ENTRY main {
  a = s32[4,16]{1,0} parameter(0)
  b = s32[16,16]{1,0} parameter(1)
  ROOT d = s32[4,16]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


@pytest.mark.parametrize("hlo, op, said, line", [
    (POPCNT_16, "popcnt", "popcnt 'p'", 7),
    # the rules take a product away only when an operand is a constant (isel/obstacles.py)
    (DOT_4X16, "dot", "no vec instruction computes dot or multiply", 6),
])
def test_vec_refuses_what_no_instruction_computes_before_any_search(vec, hlo, op, said, line):
    t0 = time.perf_counter()
    with pytest.raises(CompileError) as info:
        compile_hlo(vec, hlo, _options())
    assert time.perf_counter() - t0 < 5
    err = info.value
    assert err.refusal is not None and err.refusal.kind == UNSUPPORTED and err.refusal.what == (op,)
    assert "vec cannot run this kernel" in err.message and said in err.message
    assert err.loc is not None and err.loc.line == line


# --- mat1: matmuls in one buffer -----------------------------------------------------------------

MM_16 = """HloModule mm_16

ENTRY main {
  a = s32[16,16]{1,0} parameter(0)
  b = s32[16,16]{1,0} parameter(1)
  ROOT d = s32[16,16]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""

MM_32X16 = MM_16.replace("mm_16", "mm_32x16").replace(
    "a = s32[16,16]", "a = s32[32,16]").replace("ROOT d = s32[16,16]", "ROOT d = s32[32,16]")

MM_BIAS_16 = """HloModule mm_bias_16

ENTRY main {
  a = s32[16,16]{1,0} parameter(0)
  b = s32[16,16]{1,0} parameter(1)
  c = s32[16,16]{1,0} parameter(2)
  d = s32[16,16]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT s = s32[16,16]{1,0} add(d, c)
}
"""


def test_mat1_multiplies_one_tile(mat1):
    res = _compiled(mat1, MM_16)
    assert _ops(res) == {"ld": 2, "mm": 1, "st": 1}


def test_mat1_multiplies_two_row_tiles(mat1):
    ops = _ops(_compiled(mat1, MM_32X16))
    assert ops["mm"] + ops["mma"] == 2 and ops["st"] == 2


def test_mat1_adds_a_bias_in_place(mat1):
    # the buffer holds no element-wise instruction: the bias add is the accumulating mma
    res = _compiled(mat1, MM_BIAS_16)
    assert _ops(res) == {"ld": 3, "mma": 1, "st": 1}
