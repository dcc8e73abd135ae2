"""HLO text front end: real JAX output, XLA dump style, literals, symbols, round trips."""
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime_skeleton.hlo import parse_module, parse_type, print_module
from runtime_skeleton.hlo.printer import format_scalar
from runtime_skeleton.ir.attrs import ConvDimLabels, Literal, PadDim, SliceDim, Window, WindowDim
from runtime_skeleton.ir.dtypes import DTYPES, bf16, f32, s32
from runtime_skeleton.ir.graph import Computation, Instruction, Module
from runtime_skeleton.ir.ops import FLOAT_ONLY_UNARY
from runtime_skeleton.ir.shape_inference import infer_type
from runtime_skeleton.ir.types import Layout, TensorType, TupleType


def roundtrip(m: Module) -> Module:
    text = print_module(m)
    again = parse_module(text)
    assert again == m, text
    assert print_module(again) == text
    return again


# ---------------------------------------------------------------- real JAX output


def _jax_cases():
    import jax
    import jax.numpy as jnp
    from jax import lax

    f32_ = jnp.float32
    x, w, b = jnp.ones((4, 8), f32_), jnp.ones((8, 16), f32_), jnp.ones((16,), f32_)
    img, ker = jnp.ones((1, 8, 8, 3), f32_), jnp.ones((3, 3, 3, 4), f32_)
    dw_ker = jnp.ones((3, 3, 1, 6), f32_)
    i8 = jnp.ones((4, 8), jnp.int8)

    @jax.jit
    def inner(v):
        return jnp.tanh(v) * 2.0

    cases = {
        "dense_relu_reduce": (lambda x, w, b: jnp.sum(jax.nn.relu(x @ w + b), axis=1), (x, w, b)),
        "conv_strided_dilated": (lambda a, k: lax.conv_general_dilated(
            a, k, (2, 2), ((1, 1), (0, 1)), rhs_dilation=(1, 2),
            dimension_numbers=("NHWC", "HWIO", "NHWC")), (img, ker)),
        "conv_depthwise": (lambda a, k: lax.conv_general_dilated(
            a, k, (1, 1), ((1, 1), (0, 2)), lhs_dilation=(2, 1), feature_group_count=3,
            dimension_numbers=("NHWC", "HWIO", "NHWC")), (img, dw_ker)),
        "softmax": (lambda x: jax.nn.softmax(x, axis=-1), (x,)),
        "trig_sine_cosine": (lambda v: jnp.sin(v) * jnp.cos(v) + jnp.float32(1e-05), (x,)),
        "argmax": (lambda x: jnp.argmax(x, axis=1), (x,)),
        "strided_slice": (lambda x: x[::2, 1:7:3], (x,)),
        "concat_pad_bf16": (lambda x: jnp.pad(jnp.concatenate([x, x], axis=0), ((1, 2), (0, 1)))
                            .astype(jnp.bfloat16), (x,)),
        "dynamic_slice": (lambda x, i: lax.dynamic_slice(x, (i, 0), (2, 2)), (x, jnp.int32(1))),
        "iota_int_ops": (lambda: (jnp.arange(10, dtype=jnp.int32) * 3
                                  + jnp.array([1, 2, -3, 4, 5, 6, 7, 8, 9, 10])) >> 1, ()),
        "bf16_constants": (lambda v: jnp.array([[1.0, -2.5], [jnp.inf, jnp.nan]], jnp.bfloat16) * v,
                           (jnp.ones((2, 2), jnp.bfloat16),)),
        "int8_matmul": (lambda a, c: lax.dot(a, c.T, preferred_element_type=jnp.int32), (i8, i8)),
        "batched_matmul": (lambda a, c: jnp.einsum("bij,bjk->bik", a, c),
                           (jnp.ones((2, 3, 4), f32_), jnp.ones((2, 4, 5), f32_))),
        "call_reduce_window": (lambda v: inner(lax.reduce_window(v, 0.0, lax.add, (2, 2), (1, 1), "SAME")), (x,)),
        "transpose_reverse_clamp": (lambda v: jnp.clip(jnp.flip(v.T, 0), -1.0, 1.0), (x,)),
        "dynamic_update_where": (lambda v, i: jnp.where(v > 0, lax.dynamic_update_slice(v, jnp.zeros((2, 2)),
                                                                                         (i, i)), -v),
                                 (x, jnp.int32(2))),
    }
    return {name: jax.jit(f).lower(*args).as_text(dialect="hlo") for name, (f, args) in cases.items()}


@pytest.fixture(scope="module")
def jax_texts():
    return _jax_cases()


def test_jax_outputs_parse_and_round_trip(jax_texts):
    assert len(jax_texts) >= 10
    ops_seen = set()
    for name, text in jax_texts.items():
        m = parse_module(text, f"{name}.hlo")
        roundtrip(m)
        ops_seen |= {i.opcode for c in m.computations.values() for i in c}
    for op in ("sine", "cosine", "dot", "convolution", "reduce", "call", "slice", "concatenate", "pad", "dynamic-slice",
               "convert", "iota", "compare", "select", "reduce-window", "get-tuple-element", "tuple"):
        assert op in ops_seen, op


def test_jax_dense_structure(jax_texts):
    m = parse_module(jax_texts["dense_relu_reduce"])
    assert [str(t) for t in m.parameter_types] == ["f32[4,8]{1,0}", "f32[8,16]{1,0}", "f32[16]{0}"]
    assert m.result_type == TensorType(f32, (4,), Layout((0,)))
    entry = m.entry_computation
    dot = next(i for i in entry if i.opcode == "dot")
    assert dot.attrs["lhs_contracting_dims"] == (1,) and dot.attrs["rhs_batch_dims"] == ()
    reduce = entry.root_instruction
    assert reduce.opcode == "reduce" and reduce.attrs["dimensions"] == (1,)
    assert reduce.attrs["to_apply"] in m.computations


def test_jax_argmax_is_a_variadic_reduce(jax_texts):
    m = parse_module(jax_texts["argmax"])
    reduce = next(i for c in m.computations.values() for i in c if i.opcode == "reduce")
    assert reduce.type == TupleType((TensorType(f32, (4,), Layout((0,))), TensorType(s32, (4,), Layout((0,)))))
    assert len(reduce.operands) == 4


def test_jax_conv_attributes(jax_texts):
    m = parse_module(jax_texts["conv_strided_dilated"])
    conv = m.entry_computation.root_instruction
    assert conv.attrs["dim_labels"] == ConvDimLabels("b01f", "01io", "b01f")
    assert conv.attrs["window"] == Window((WindowDim(3, 2, 1, 1), WindowDim(3, 2, 0, 1, rhs_dilate=2)))
    depthwise = parse_module(jax_texts["conv_depthwise"]).entry_computation.root_instruction
    assert depthwise.attrs["feature_group_count"] == 3


def test_jax_bf16_constant_values(jax_texts):
    m = parse_module(jax_texts["bf16_constants"])
    lit = next(i for i in m.entry_computation if i.opcode == "constant").attrs["literal"]
    assert lit.dtype == bf16 and lit.shape == (2, 2)
    vals = lit.array.astype(np.float32)
    assert vals[0, 0] == 1 and vals[0, 1] == -2.5 and vals[1, 0] == np.inf and np.isnan(vals[1, 1])


# ---------------------------------------------------------------- hand-written texts

XLA_DUMP = """\
HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[8,128]{1,0:T(8,128)})->f32[8]{0}}, \
allow_spmd_sharding_propagation_to_output={true}, frontend_attributes={fingerprint_before_lhs="abc"}

%region_0.2 (Arg_0.3: f32[], Arg_1.4: f32[]) -> f32[] {
  %Arg_0.3 = f32[] parameter(0), metadata={op_name="jit(f)/reduce_sum"}
  %Arg_1.4 = f32[] parameter(1)
  ROOT %add.5 = f32[] add(f32[] %Arg_0.3, f32[] %Arg_1.4), metadata={op_name="jit(f)/reduce_sum" source_file="x.py" source_line=3}
}

ENTRY %main.6 (Arg_0.1: f32[8,128]) -> f32[8] {
  %Arg_0.1 = f32[8,128]{1,0:T(8,128)(2,1)E(16)S(1)} parameter(0), sharding={replicated}
  %constant.2 = f32[] constant(0)
  %t = (f32[8,128], /*index=1*/f32[]) tuple(%Arg_0.1, %constant.2)
  %get-tuple-element.1 = f32[8,128]{1,0} get-tuple-element(%t), index=0, backend_config={"flag":true,"x":[1,{"y":2}]}
  ROOT %reduce.5 = f32[8]{0} reduce(f32[8,128]{1,0:T(8,128)} %get-tuple-element.1, f32[] %constant.2), dimensions={1}, to_apply=%region_0.2, metadata={op_name="jit(f)/reduce_sum" source_file="x.py" source_line=3}, backend_config="a\\"b", statistics={visualizing_index=1,stat-0=0.5}
}
"""


def test_xla_dump_style():
    m = parse_module(XLA_DUMP)
    assert m.name == "jit_f" and m.entry == "main.6"
    assert list(m.computations) == ["region_0.2", "main.6"]
    p = m.entry_computation["Arg_0.1"]
    assert p.type.layout == Layout((1, 0), ((8, 128), (2, 1)))
    assert m.entry_computation.root == "reduce.5"
    assert "metadata" not in m.entry_computation.root_instruction.attrs
    assert m.entry_computation["get-tuple-element.1"].operands == ("t",)
    text = roundtrip(m)
    assert "{1,0:T(8,128)(2,1)}" in print_module(text)


def test_bare_body_and_implicit_root():
    m = parse_module("x = u8[4] parameter(0) ROOT y = u8[4] copy(x) z = u8[4] negate(y)", default_name="k")
    assert m.entry == "k" and m.name == "k" and m.entry_computation.root == "y"
    m = parse_module("x = u8[4] parameter(0) y = u8[4] copy(x)")
    assert m.entry_computation.root == "y"
    roundtrip(m)


def test_last_computation_is_entry_without_ENTRY_and_any_call_order():
    text = """
    main { a = f32[2] parameter(0)  ROOT r = f32[2] call(a), calls=helper }
    helper { p = f32[2] parameter(0)  ROOT q = f32[2] exponential(p) }
    """
    m = parse_module(text)
    assert m.entry == "helper"
    m = parse_module(text.replace("main {", "ENTRY main {"))
    assert m.entry == "main" and m.entry_computation.root_instruction.attrs["to_apply"] == "helper"
    roundtrip(m)


def test_literal_forms():
    text = """
    a = f32[2,2] constant({ { 1, -2.5 }, { inf, nan } })
    b = f32[] constant(1e-05)
    c = f32[3] constant({-inf, -nan, -0})
    d = pred[2] constant({true, false})
    e = s32[0,3] constant({})
    f = s32[2,0] constant({ {}, {} })
    g = u8[4] constant({0x1F, 255, 0, 7})
    h = s64[2,2] constant({1, 2, 3, 4})
    i = bf16[3] constant({1.00390625, 3.3895313892515355e+38, 0.1})
    ROOT t = (f32[2,2], f32[], f32[3], pred[2], s32[0,3], s32[2,0], u8[4], s64[2,2], bf16[3]) tuple(a, b, c, d, e, f, g, h, i)
    """
    m = parse_module(text)
    lit = {i.name: i.attrs.get("literal") for i in m.entry_computation}
    assert lit["b"].array == np.float32(1e-05)
    c = lit["c"].array
    assert c[0] == -np.inf and np.isnan(c[1]) and c[2] == 0 and math.copysign(1, c[2]) == -1
    assert lit["c"] == Literal(f32, np.array([-np.inf, np.nan, -0.0], np.float32))  # canonical NaN
    assert lit["d"].array.tolist() == [True, False]
    assert lit["e"].shape == (0, 3) and lit["f"].shape == (2, 0)
    assert lit["g"].array.tolist() == [31, 255, 0, 7]
    assert lit["h"].array.tolist() == [[1, 2], [3, 4]]  # XLA's flat dense form
    # 1.00390625 is halfway between two bf16 values: ties go to even (1.0)
    assert lit["i"].array.view(np.uint16).tolist()[:2] == [0x3F80, 0x7F7F]
    roundtrip(m)


def test_bf16_rounds_correctly_from_decimal():
    # Just above the halfway point: must round up, which f64 -> f32 -> bf16 would get wrong.
    m = parse_module("ROOT c = bf16[] constant(1.00390625000001)")
    assert m.entry_computation["c"].attrs["literal"].array.view(np.uint16) == 0x3F81


def test_float_printing_is_short_and_exact():
    assert format_scalar(np.float32(0.1), f32) == "0.1"
    assert format_scalar(np.float32(-0.0), f32) == "-0"
    assert format_scalar(np.float32(1.0), f32) == "1"
    assert format_scalar(ml_dtypes.bfloat16(0.1), bf16) == "0.1"
    assert format_scalar(ml_dtypes.bfloat16(100), bf16) == "100"
    assert format_scalar(ml_dtypes.bfloat16(3.3895313892515355e38), bf16) == "3.39e+38"
    assert format_scalar(np.float32(np.nan), f32) == "nan"


def test_symbolic_shapes_with_int_symbols():
    text = """x1 = u8[n*128] parameter(0)  a = u8[n,64,2] reshape(x1)
              s = u8[(n+1)/2,64,2] slice(a), slice={[0:n:2], [0:64], [0:2]}
              c = u8[] constant(0)
              p = u8[n+2,64,2] pad(a, c), padding=1_1x0_0x0_0
              q = u8[n,64,2] pad(p, c), padding=-1_(0-1)x0_0x0_0
              d = u8[n-1,64,2] dynamic-slice(q, c, c, c), dynamic_slice_sizes={n - 1, 64, 2}
              ROOT y = bf16[n,64] bitcast-convert(a)"""
    m = parse_module(text, symbols={"n": 3})
    entry = m.entry_computation
    assert entry["x1"].type.shape == (384,)
    assert entry["s"].attrs["slice"][0] == SliceDim(0, 3, 2)
    assert entry["q"].attrs["padding"][0] == PadDim(-1, -1)
    assert entry["d"].attrs["dynamic_slice_sizes"] == (2, 64, 2)
    assert m.result_type == TensorType(bf16, (3, 64))


def test_symbolic_shapes_with_opaque_values():
    class Sym:  # stands in for a z3 integer: arithmetic builds expressions, no int()
        def __init__(self, s):
            self.s = s

        def __str__(self):
            return self.s

        def __neg__(self):
            return Sym(f"-{self}")

    for name, op in [("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"), ("mod", "%")]:
        setattr(Sym, f"__{name}__", lambda a, b, op=op: Sym(f"({a} {op} {b})"))
        setattr(Sym, f"__r{name}__", lambda a, b, op=op: Sym(f"({b} {op} {a})"))

    n = Sym("n")
    m = parse_module("x = f32[n*2, 4] parameter(0) ROOT y = f32[n/2, 4] slice(x), slice={[1:n-1:2], [0:4]}",
                     symbols={"n": n}, infer_types=False)
    entry = m.entry_computation
    assert str(entry["x"].type.shape[0]) == "(n * 2)"
    assert str(entry["y"].attrs["slice"][0].limit) == "(n - 1)"
    assert str(entry["y"].type.shape[0]) == "(n / 2)"  # '/' stays integer division for z3


def test_symbolic_shapes_with_z3():
    z3 = pytest.importorskip("z3")
    n = z3.Int("n")
    text = """x1 = u8[n*128] parameter(0)  a = u8[n,64,2] reshape(x1)
              s = u8[n/2,64,2] slice(a), slice={[0:n:2], [0:64], [0:2]}
              ROOT y = bf16[n,64] bitcast-convert(a)"""
    m = parse_module(text, symbols={"n": n}, infer_types=False)
    entry = m.entry_computation
    prove = z3.Solver()
    prove.add(n >= 1, entry["x1"].type.shape[0] != n * 128)
    assert prove.check() == z3.unsat
    assert z3.simplify(entry["s"].type.shape[0] - n / 2).eq(z3.IntVal(0))
    assert entry["s"].attrs["slice"][0].limit is n or z3.eq(entry["s"].attrs["slice"][0].limit, n)


def test_start_line_and_col_offset_locations():
    from runtime_skeleton.errors import HloError
    with pytest.raises(HloError) as e:
        parse_module("x = f32[4] parameter(0)\n  ROOT y = f32[4] bogus(x)", "k.isa", start_line=10, start_col=15)
    assert str(e.value).startswith("k.isa:11:19: unknown HLO op 'bogus'")
    with pytest.raises(HloError) as e:
        parse_module("x = f32[4] bogus(0)", "k.isa", start_line=10, start_col=15)
    assert str(e.value).startswith("k.isa:10:26:")


def test_attribute_normalisation():
    text = """
    HloModule m
    ENTRY e {
      a = f32[2,3] parameter(0)
      b = f32[3,4] parameter(1)
      d = f32[2,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, precision_config={default,default}, algorithm=dot_f32_f32_f32
      k = f32[1,3,4] reshape(b)
      l = f32[1,2,3] reshape(a)
      c = f32[1,2,4] convolution(l, k), dim_labels=b0f_0io->b0f, window={size=1}, operand_precision={highest,highest}
      cmp = pred[2,4] compare(d, d), direction=GE, type=TOTALORDER
      ROOT r = f32[2,3] add(a, a), result_accuracy={tolerance={atol=0 rtol=0 ulps=1}}, unknown_metadata_thing="x"
    }"""
    m = parse_module(text)
    e = m.entry_computation
    assert e["d"].attrs["lhs_batch_dims"] == () and "precision_config" not in e["d"].attrs
    assert e["c"].attrs["feature_group_count"] == 1 and e["c"].attrs["batch_group_count"] == 1
    assert e["cmp"].attrs["type"] == "TOTALORDER"
    assert dict(e["r"].attrs) == {}
    roundtrip(m)


def test_window_and_padding_spellings():
    text = """
    s { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT c = f32[] maximum(a, b) }
    ENTRY e {
      x = f32[1,9,9,2] parameter(0)
      z = f32[] constant(-inf)
      ROOT r = f32[1,4,4,2] reduce-window(x, z), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x0_0x1_1x0_0 rhs_dilate=1x1x2x1 rhs_reversal=0x0x1x0}, to_apply=s
    }"""
    m = parse_module(text)
    w = m.entry_computation.root_instruction.attrs["window"]
    assert w.dims[2] == WindowDim(3, 2, 1, 1, 1, 2, True)
    assert "rhs_reversal=0x0x1x0" in print_module(m)
    roundtrip(m)


def test_parse_type():
    assert parse_type("bf16[n,64]{0,1}", symbols={"n": 3}) == TensorType(bf16, (3, 64), Layout((0, 1)))
    assert parse_type("(f32[], (s32[2], pred[]))") == TupleType(
        (TensorType(f32, ()), TupleType((TensorType(s32, (2,)), TensorType(DTYPES["pred"], ())))))
    from runtime_skeleton.errors import HloError
    with pytest.raises(HloError, match="unexpected 'x' after the type"):
        parse_type("f32[2] x")


# ---------------------------------------------------------------- random well-typed modules

_NAMES = ["v", "add", "x_", "get-tuple-element", "reduce_sum", "_t", "arg.0"]
_FLOATS = ["f32", "bf16", "f16", "f64"]
_INTS = ["s8", "s32", "s64", "u8", "u32"]


@st.composite
def _layout(draw, rank):
    kind = draw(st.sampled_from(["none", "default", "perm", "tiled"]))
    if kind == "none":
        return None
    perm = tuple(draw(st.permutations(range(rank)))) if kind != "default" else tuple(range(rank - 1, -1, -1))
    tiles = ()
    if kind == "tiled" and rank:
        tiles = tuple(tuple(draw(st.lists(st.sampled_from([1, 2, 8, 128]), min_size=1, max_size=2)))
                      for _ in range(draw(st.integers(1, 2))))
    return Layout(perm, tiles)


@st.composite
def _literal(draw, dtype, shape):
    n = math.prod(shape)
    if dtype.is_pred:
        arr = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    else:
        raw = draw(st.binary(min_size=n * dtype.nbytes, max_size=n * dtype.nbytes))
        arr = np.frombuffer(raw, dtype=dtype.np).copy()
        if dtype.is_float:
            arr[np.isnan(arr)] = np.nan  # the printer/parser canonicalise NaNs
            special = draw(st.lists(st.sampled_from([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, 65504.0]),
                                    max_size=n))
            arr[: len(special)] = np.array(special).astype(dtype.np)
    return Literal(dtype, arr.reshape(shape))


class _Builder:
    def __init__(self, draw):
        self.draw = draw
        self.instrs: list[Instruction] = []
        self.comps: dict[str, Computation] = {}

    def add(self, opcode, operands, attrs=None, declared=None):
        attrs = attrs or {}
        types = [self.type_of(o) for o in operands]
        t = infer_type(opcode, types, attrs, self.comps, declared)
        if isinstance(t, TensorType):
            t = t.with_layout(self.draw(_layout(t.rank)))
        name = f"{self.draw(st.sampled_from(_NAMES))}.{len(self.instrs)}"
        self.instrs.append(Instruction(name, opcode, t, tuple(operands), attrs))
        return name

    def type_of(self, name):
        return next(i.type for i in self.instrs if i.name == name)

    def arrays(self, pred=lambda t: True):
        return [i.name for i in self.instrs if isinstance(i.type, TensorType) and pred(i.type)]

    def reducer(self, dtype):
        name = f"sum_{dtype.name}"
        if name not in self.comps:
            s = TensorType(dtype, ())
            op = "or" if dtype.is_pred else "add"
            self.comps[name] = Computation(name, [
                Instruction("p.0", "parameter", s, attrs={"parameter_number": 0}),
                Instruction("p.1", "parameter", s, attrs={"parameter_number": 1}),
                Instruction("r", op, s, ("p.0", "p.1")),
            ], "r")
        return name


_shape = st.lists(st.integers(0, 4), max_size=3).map(tuple)


def _step(b: _Builder, draw):
    x = draw(st.sampled_from(b.arrays()))
    t: TensorType = b.type_of(x)
    dt = t.dtype
    op = draw(st.sampled_from(["unary", "binary", "compare_select", "convert", "broadcast", "reshape", "transpose",
                               "slice", "concatenate", "dot", "reduce", "constant", "pad", "reverse", "iota",
                               "tuple"]))
    if op == "unary":
        choices = ["copy", "negate", "abs"] + (sorted(FLOAT_ONLY_UNARY) if dt.is_float else []) \
            + (["not", "popcnt"] if dt.is_int else []) + (["not"] if dt.is_pred else [])
        b.add(draw(st.sampled_from(choices)), [x])
    elif op == "binary":
        y = draw(st.sampled_from(b.arrays(lambda u: u.same_shape_dtype(t))))
        choices = ["add", "multiply", "maximum"] + (["and", "xor", "shift-left"] if dt.is_int else [])
        b.add(draw(st.sampled_from(choices)), [x, y])
    elif op == "compare_select":
        c = b.add("compare", [x, x], {"direction": draw(st.sampled_from(["EQ", "LT", "GE"]))})
        b.add("select", [c, x, x])
    elif op == "convert":
        target = DTYPES[draw(st.sampled_from(_FLOATS + _INTS + ["pred"]))]
        b.add("convert", [x], declared=TensorType(target, t.shape))
    elif op == "broadcast":
        out = [(n, True) for n in t.shape]  # (size, is an operand dimension)
        for _ in range(draw(st.integers(0, 2))):
            out.insert(draw(st.integers(0, len(out))), (draw(st.integers(1, 3)), False))
        dims = tuple(k for k, (_, from_operand) in enumerate(out) if from_operand)
        b.add("broadcast", [x], {"dimensions": dims}, declared=TensorType(dt, tuple(n for n, _ in out)))
    elif op == "reshape":
        out = draw(st.sampled_from([(t.size,), t.shape + (1,), (1,) + t.shape]))
        b.add("reshape", [x], declared=TensorType(dt, out))
    elif op == "transpose":
        b.add("transpose", [x], {"dimensions": tuple(draw(st.permutations(range(t.rank))))})
    elif op == "slice":
        spec = []
        for n in t.shape:
            start = draw(st.integers(0, n))
            spec.append(SliceDim(start, draw(st.integers(start, n)), draw(st.integers(1, 3))))
        b.add("slice", [x], {"slice": tuple(spec)})
    elif op == "concatenate" and t.rank:
        b.add("concatenate", [x, x, x][: draw(st.integers(1, 3))], {"dimensions": (draw(st.integers(0, t.rank - 1)),)})
    elif op == "dot" and t.rank and not dt.is_pred:
        c = draw(st.integers(0, t.rank - 1))
        others = [d for d in range(t.rank) if d != c]
        batch = tuple(draw(st.lists(st.sampled_from(others), unique=True, max_size=1))) if others else ()
        attrs = {"lhs_batch_dims": batch, "rhs_batch_dims": batch,
                 "lhs_contracting_dims": (c,), "rhs_contracting_dims": (c,)}
        out = s32 if dt.is_int else dt
        declared = infer_type("dot", [t, t], attrs).with_dtype(out)
        b.add("dot", [x, x], attrs, declared=declared)
    elif op == "reduce":
        init = b.add("constant", [], {"literal": draw(_literal(dt, ()))}, declared=TensorType(dt, ()))
        dims = tuple(sorted(draw(st.sets(st.integers(0, max(t.rank - 1, 0)), max_size=t.rank))))
        b.add("reduce", [x, init], {"dimensions": dims, "to_apply": b.reducer(dt)})
    elif op == "constant":
        dtype = DTYPES[draw(st.sampled_from(_FLOATS + _INTS + ["pred"]))]
        shape = draw(_shape)
        b.add("constant", [], {"literal": draw(_literal(dtype, shape))}, declared=TensorType(dtype, shape))
    elif op == "pad":
        value = b.add("constant", [], {"literal": draw(_literal(dt, ()))}, declared=TensorType(dt, ()))
        spec = []
        for n in t.shape:
            lo, hi = draw(st.integers(-n, 2)), draw(st.integers(-n, 2))
            interior = draw(st.integers(0, 2))
            if lo + hi + n + max(n - 1, 0) * interior < 0:
                lo = hi = 0
            spec.append(PadDim(lo, hi, interior))
        b.add("pad", [x, value], {"padding": tuple(spec)})
    elif op == "reverse":
        b.add("reverse", [x], {"dimensions": tuple(draw(st.sets(st.integers(0, max(t.rank - 1, 0)), max_size=t.rank)))})
    elif op == "iota" and not dt.is_pred:
        shape = draw(_shape.filter(bool))
        b.add("iota", [], {"iota_dimension": draw(st.integers(0, len(shape) - 1))}, declared=TensorType(dt, shape))
    elif op == "tuple":
        tup = b.add("tuple", [x, x])
        b.add("get-tuple-element", [tup], {"index": draw(st.integers(0, 1))})


@st.composite
def random_modules(draw):
    b = _Builder(draw)
    for k in range(draw(st.integers(1, 3))):
        dtype = DTYPES[draw(st.sampled_from(_FLOATS + _INTS + ["pred"]))]
        b.add("parameter", [], {"parameter_number": k}, declared=TensorType(dtype, draw(_shape)))
    for _ in range(draw(st.integers(1, 8))):
        _step(b, draw)
    entry = Computation("main", b.instrs, b.instrs[-1].name)
    comps = {**b.comps, "main": entry}
    return Module(draw(st.sampled_from(["m", "jit_f", "module-1.x"])), comps, "main")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_modules())
def test_random_modules_round_trip(m):
    roundtrip(m)
