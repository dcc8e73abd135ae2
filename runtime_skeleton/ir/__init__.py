"""Tensor IR: element types, tensor/tuple types with XLA layouts, the op set and graphs."""
from .attrs import ConvDimLabels, Literal, PadDim, SliceDim, Window, WindowDim
from .dtypes import DTYPES, DType, dtype, from_numpy
from .graph import Computation, Instruction, Module
from .ops import ALL_OPS, BINARY_OPS, KNOWN_UNSUPPORTED, UNARY_OPS
from .types import Layout, TensorType, TupleType, Type, leaves

__all__ = [
    "ALL_OPS", "BINARY_OPS", "Computation", "ConvDimLabels", "DTYPES", "DType", "Instruction",
    "KNOWN_UNSUPPORTED", "Layout", "Literal", "Module", "PadDim", "SliceDim", "TensorType",
    "TupleType", "Type", "UNARY_OPS", "Window", "WindowDim", "dtype", "from_numpy", "leaves",
]
