"""Direct tests of the tricky XLA shape-inference rules."""
import pytest

from runtime_skeleton.ir.attrs import ConvDimLabels, PadDim, SliceDim, Window, WindowDim
from runtime_skeleton.ir.dtypes import bf16, f32, pred, s8, s32, u8, u32
from runtime_skeleton.ir.graph import Computation, Instruction
from runtime_skeleton.ir.shape_inference import ShapeError, check_operand_count, infer_type, window_output_size
from runtime_skeleton.ir.types import TensorType, TupleType


def T(dtype, *shape):
    return TensorType(dtype, tuple(shape))


def dot(lhs, rhs, declared=None, **dims):
    attrs = {k: tuple(v) for k, v in dims.items()}
    return infer_type("dot", [lhs, rhs], attrs, declared=declared)


# ---------------------------------------------------------------- dot


def test_dot_matmul():
    assert dot(T(f32, 4, 8), T(f32, 8, 16), lhs_contracting_dims=[1], rhs_contracting_dims=[0]) == T(f32, 4, 16)


def test_dot_batch_dims_come_first_then_lhs_free_then_rhs_free():
    lhs, rhs = T(f32, 5, 2, 3, 7), T(f32, 7, 3, 9, 2)
    out = dot(lhs, rhs, lhs_batch_dims=[1, 2], rhs_batch_dims=[3, 1],
              lhs_contracting_dims=[3], rhs_contracting_dims=[0])
    assert out == T(f32, 2, 3, 5, 9)


def test_dot_outer_product_without_contracting_dims():
    assert dot(T(f32, 3), T(f32, 4)) == T(f32, 3, 4)


def test_dot_takes_the_declared_element_type():
    out = dot(T(s8, 4, 8), T(s8, 8, 2), declared=T(s32, 4, 2), lhs_contracting_dims=[1], rhs_contracting_dims=[0])
    assert out == T(s32, 4, 2)
    out = dot(T(bf16, 4, 8), T(f32, 8, 2), declared=T(f32, 4, 2), lhs_contracting_dims=[1], rhs_contracting_dims=[0])
    assert out == T(f32, 4, 2)


@pytest.mark.parametrize("dims, phrase", [
    ({"lhs_contracting_dims": [1], "rhs_contracting_dims": [1]}, "contracting dimensions differ in size"),
    ({"lhs_batch_dims": [0], "rhs_batch_dims": []}, "as many lhs as rhs batch"),
    ({"lhs_batch_dims": [0], "rhs_batch_dims": [0], "lhs_contracting_dims": [0], "rhs_contracting_dims": [1]},
     "both batch and contracting"),
    ({"lhs_contracting_dims": [2], "rhs_contracting_dims": [0]}, "out of range"),
])
def test_dot_errors(dims, phrase):
    with pytest.raises(ShapeError, match=phrase):
        dot(T(f32, 4, 8), T(f32, 8, 16), **dims)


# ---------------------------------------------------------------- convolution


def conv(lhs, rhs, labels="b01f_01io->b01f", window=(), fgc=1, bgc=1, declared=None):
    attrs = {"dim_labels": ConvDimLabels(*labels.replace("->", "_").split("_")),
             "window": Window(tuple(window)), "feature_group_count": fgc, "batch_group_count": bgc}
    return infer_type("convolution", [lhs, rhs], attrs, declared=declared)


def test_conv_nhwc_stride_padding_dilation():
    # jax: conv_general_dilated(1x8x8x3, 3x3x3x4, strides (2,2), padding ((1,1),(0,1)), rhs_dilation (1,2))
    window = [WindowDim(3, stride=2, pad_lo=1, pad_hi=1), WindowDim(3, stride=2, pad_lo=0, pad_hi=1, rhs_dilate=2)]
    assert conv(T(f32, 1, 8, 8, 3), T(f32, 3, 3, 3, 4), window=window) == T(f32, 1, 4, 3, 4)


def test_conv_nchw_labels_and_lhs_dilation():
    window = [WindowDim(2, lhs_dilate=2), WindowDim(1)]
    out = conv(T(f32, 2, 3, 5, 6), T(f32, 7, 3, 2, 1), labels="bf01_oi01->bf01", window=window)
    assert out == T(f32, 2, 7, 8, 6)  # (5-1)*2+1 = 9 dilated rows, window 2 -> 8


def test_conv_feature_groups():
    window = [WindowDim(3, pad_lo=1, pad_hi=1)]
    out = conv(T(f32, 2, 10, 8), T(f32, 3, 2, 12), labels="b0f_0io->b0f", window=window, fgc=4)
    assert out == T(f32, 2, 10, 12)
    with pytest.raises(ShapeError, match="feature_group_count"):
        conv(T(f32, 2, 10, 8), T(f32, 3, 3, 12), labels="b0f_0io->b0f", window=window, fgc=4)


def test_conv_batch_groups_divide_batch():
    out = conv(T(f32, 8, 5, 3), T(f32, 1, 3, 4), labels="b0f_0io->b0f", window=[WindowDim(1)], bgc=2)
    assert out == T(f32, 4, 5, 4)
    with pytest.raises(ShapeError, match="batch_group_count"):
        conv(T(f32, 7, 5, 3), T(f32, 1, 3, 4), labels="b0f_0io->b0f", window=[WindowDim(1)], bgc=2)


def test_conv_window_must_match_kernel():
    with pytest.raises(ShapeError, match="does not match kernel size"):
        conv(T(f32, 1, 8, 3), T(f32, 3, 3, 4), labels="b0f_0io->b0f", window=[WindowDim(2)])


def test_conv_declared_element_type():
    out = conv(T(s8, 1, 4, 2), T(s8, 1, 2, 3), labels="b0f_0io->b0f", window=[WindowDim(1)], declared=T(s32, 1, 4, 3))
    assert out == T(s32, 1, 4, 3)


def test_window_output_size_formula():
    assert window_output_size(8, WindowDim(3, stride=2, pad_lo=1, pad_hi=1)) == 4
    assert window_output_size(2, WindowDim(5)) == 0
    with pytest.raises(ShapeError):
        window_output_size(4, WindowDim(2, stride=0))


# ---------------------------------------------------------------- pad, slice, bitcast-convert


def pad(x, *dims):
    return infer_type("pad", [x, T(x.dtype)], {"padding": tuple(PadDim(*d) for d in dims)})


def test_pad_interior_and_negative():
    assert pad(T(f32, 4, 3), (1, 2, 1), (0, 0)) == T(f32, 10, 3)  # 1 + 2 + 4 + 3*1
    assert pad(T(f32, 4, 3), (-1, -2), (0, -3)) == T(f32, 1, 0)
    assert pad(T(f32, 0), (1, 1, 5)) == T(f32, 2)  # no interior gaps in an empty dimension
    with pytest.raises(ShapeError, match="negative size"):
        pad(T(f32, 4), (-3, -2))
    with pytest.raises(ShapeError, match="interior padding -1"):
        pad(T(f32, 4), (0, 0, -1))


def test_slice_strides_round_up():
    spec = (SliceDim(0, 4, 2), SliceDim(1, 7, 3), SliceDim(2, 2))
    assert infer_type("slice", [T(f32, 4, 8, 2)], {"slice": spec}) == T(f32, 2, 2, 0)
    with pytest.raises(ShapeError, match="invalid for size 8"):
        infer_type("slice", [T(f32, 8)], {"slice": (SliceDim(0, 9),)})


def test_bitcast_convert_width_changes():
    bc = lambda x, dt: infer_type("bitcast-convert", [x], {}, declared=T(dt))
    assert bc(T(f32, 4), s32) == T(s32, 4)
    assert bc(T(u8, 3, 64, 2), bf16) == T(bf16, 3, 64)
    assert bc(T(u32, 5), u8) == T(u8, 5, 4)
    with pytest.raises(ShapeError, match="last dimension of size 2"):
        bc(T(u8, 3, 64), bf16)


# ---------------------------------------------------------------- reduce


def reducer(name, *types, n_out=1):
    params = [Instruction(f"p{k}", "parameter", t, attrs={"parameter_number": k}) for k, t in enumerate(types)]
    out_types = types[: len(types) // 2]
    root_type = out_types[0] if n_out == 1 else TupleType(tuple(out_types))
    root = Instruction("r", "tuple" if n_out > 1 else "add", root_type, ("p0", "p1"))
    return {name: Computation(name, params + [root], "r")}


def test_reduce_single_and_variadic():
    comps = reducer("sum", T(f32), T(f32))
    out = infer_type("reduce", [T(f32, 4, 8), T(f32)], {"dimensions": (1,), "to_apply": "sum"}, comps)
    assert out == T(f32, 4)
    comps = reducer("argmax", T(f32), T(s32), T(f32), T(s32), n_out=2)
    out = infer_type("reduce", [T(f32, 4, 8), T(s32, 4, 8), T(f32), T(s32)],
                     {"dimensions": (0, 1), "to_apply": "argmax"}, comps)
    assert out == TupleType((T(f32), T(s32)))


def test_reduce_checks_the_reducer_signature():
    comps = reducer("sum", T(f32), T(f32))
    with pytest.raises(ShapeError, match="must take 4 parameters"):
        infer_type("reduce", [T(f32, 4), T(f32, 4), T(f32), T(f32)], {"dimensions": (0,), "to_apply": "sum"}, comps)
    with pytest.raises(ShapeError, match="parameter 0 of to_apply computation 'sum' must be s32"):
        infer_type("reduce", [T(s32, 4), T(s32)], {"dimensions": (0,), "to_apply": "sum"}, comps)
    with pytest.raises(ShapeError, match="unknown computation 'nope'"):
        infer_type("reduce", [T(f32, 4), T(f32)], {"dimensions": (0,), "to_apply": "nope"}, comps)


def test_reduce_window_variadic_shapes():
    comps = reducer("sum", T(f32), T(f32))
    window = Window((WindowDim(2, stride=2), WindowDim(3, pad_lo=1, pad_hi=1)))
    out = infer_type("reduce-window", [T(f32, 8, 5), T(f32)], {"window": window, "to_apply": "sum"}, comps)
    assert out == T(f32, 4, 5)


# ---------------------------------------------------------------- the rest


def test_elementwise_dtype_rules():
    assert infer_type("is-finite", [T(bf16, 3)], {}) == T(pred, 3)
    assert infer_type("compare", [T(s32, 3), T(s32, 3)], {"direction": "LT"}) == T(pred, 3)
    with pytest.raises(ShapeError, match="floating-point"):
        infer_type("exponential", [T(s32, 3)], {})
    with pytest.raises(ShapeError, match="integer operand"):
        infer_type("shift-left", [T(f32, 3), T(f32, 3)], {})
    with pytest.raises(ShapeError, match="same type"):
        infer_type("add", [T(f32, 3), T(f32, 4)], {})


def test_select_clamp_broadcast_reshape_transpose():
    assert infer_type("select", [T(pred, 2), T(f32, 2), T(f32, 2)], {}) == T(f32, 2)
    assert infer_type("clamp", [T(f32), T(f32, 5), T(f32)], {}) == T(f32, 5)
    assert infer_type("broadcast", [T(f32, 3)], {"dimensions": (1,)}, declared=T(f32, 2, 3)) == T(f32, 2, 3)
    with pytest.raises(ShapeError, match="does not match"):
        infer_type("broadcast", [T(f32, 3)], {"dimensions": (0,)}, declared=T(f32, 2, 3))
    with pytest.raises(ShapeError, match="element count"):
        infer_type("reshape", [T(f32, 6)], {}, declared=T(f32, 4, 2))
    assert infer_type("transpose", [T(f32, 2, 3, 4)], {"dimensions": (2, 0, 1)}) == T(f32, 4, 2, 3)


def test_dynamic_slice_and_update():
    idx = T(s32)
    assert infer_type("dynamic-slice", [T(f32, 4, 8), idx, idx], {"dynamic_slice_sizes": (2, 2)}) == T(f32, 2, 2)
    assert infer_type("dynamic-update-slice", [T(f32, 4, 8), T(f32, 2, 8), idx, idx], {}) == T(f32, 4, 8)
    with pytest.raises(ShapeError, match="2 scalar start indices"):
        infer_type("dynamic-slice", [T(f32, 4, 8), idx], {"dynamic_slice_sizes": (2, 2)})


def test_concatenate_tuple_gte_call():
    assert infer_type("concatenate", [T(f32, 2, 3), T(f32, 5, 3)], {"dimensions": (0,)}) == T(f32, 7, 3)
    tup = infer_type("tuple", [T(f32, 2), T(s32)], {})
    assert tup == TupleType((T(f32, 2), T(s32)))
    assert infer_type("get-tuple-element", [tup], {"index": 1}) == T(s32)
    comps = reducer("f", T(f32), T(f32))
    assert infer_type("call", [T(f32), T(f32)], {"to_apply": "f"}, comps) == T(f32)
    with pytest.raises(ShapeError, match="expects f32"):
        infer_type("call", [T(f32), T(s32)], {"to_apply": "f"}, comps)


def test_operand_counts():
    check_operand_count("tuple", 0)
    with pytest.raises(ShapeError, match="'add' takes 2 operands, got 3"):
        check_operand_count("add", 3)
    with pytest.raises(ShapeError, match="even number"):
        check_operand_count("reduce", 3)


def test_constant_literal_must_match_declared_type():
    import numpy as np

    from runtime_skeleton.ir.attrs import Literal
    lit = Literal(f32, np.zeros((2, 3), np.float32))
    assert infer_type("constant", [], {"literal": lit}, declared=T(f32, 2, 3)) == T(f32, 2, 3)
    with pytest.raises(ShapeError, match="does not match its type"):
        infer_type("constant", [], {"literal": lit}, declared=T(f32, 3, 2))
