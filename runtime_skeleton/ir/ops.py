"""The HLO op set actgen understands, grouped by how they behave.

Opcodes are XLA's own spellings. Anything not listed here is rejected by the
parser with an error that names it.
"""
from __future__ import annotations

# Elementwise, one operand, result has the operand's type (except where noted in shape inference).
UNARY_OPS = frozenset({
    "abs", "negate", "exponential", "exponential-minus-one", "log", "log-plus-one",
    "sqrt", "rsqrt", "cbrt", "tanh", "logistic", "sin", "cos", "tan", "erf",
    "floor", "ceil", "round-nearest-even", "round-nearest-afz", "sign", "not",
    "popcnt", "count-leading-zeros", "is-finite", "copy",
    "sine", "cosine",  # XLA's own spellings of sin/cos (what JAX output contains)
})

# Elementwise, two operands of the same type.
BINARY_OPS = frozenset({
    "add", "subtract", "multiply", "divide", "remainder", "power", "maximum", "minimum",
    "and", "or", "xor", "shift-left", "shift-right-arithmetic", "shift-right-logical", "atan2",
})

# Unary ops defined only on floating-point element types.
FLOAT_ONLY_UNARY = frozenset({
    "exponential", "exponential-minus-one", "log", "log-plus-one", "sqrt", "rsqrt", "cbrt",
    "tanh", "logistic", "sin", "cos", "tan", "erf", "floor", "ceil", "round-nearest-even",
    "round-nearest-afz", "is-finite", "sine", "cosine",
})
INT_ONLY_UNARY = frozenset({"popcnt", "count-leading-zeros"})
FLOAT_ONLY_BINARY = frozenset({"atan2"})
INT_ONLY_BINARY = frozenset({"shift-left", "shift-right-arithmetic", "shift-right-logical"})
LOGICAL_OPS = frozenset({"not", "and", "or", "xor"})  # pred or integer

STRUCTURAL_OPS = frozenset({
    "parameter", "constant", "iota", "broadcast", "reshape", "transpose", "slice",
    "dynamic-slice", "dynamic-update-slice", "concatenate", "pad", "reverse", "convert",
    "bitcast-convert", "dot", "reduce", "reduce-window", "select", "compare", "clamp",
    "call", "tuple", "get-tuple-element", "convolution",
})

ALL_OPS = UNARY_OPS | BINARY_OPS | STRUCTURAL_OPS
# operators that only move, repeat or drop their operands' elements (each element of the
# result is an element of an operand or of a constant padding value)
DATA_MOVEMENT = frozenset({"reshape", "bitcast-convert", "transpose", "slice", "concatenate", "pad", "broadcast",
                           "copy", "reverse"})
# data movement whose result's elements are its operands' values (a bitcast reads other values from the bytes)
VALUE_MOVES = DATA_MOVEMENT - {"bitcast-convert"}

# Op traits: every module that asks what an operator does to its operands' elements reads these
# (or a set built from them, saying how it differs).
ELEMENTWISE = UNARY_OPS | BINARY_OPS | frozenset({"convert", "compare", "select", "clamp"})
VIEWS = frozenset({"reshape", "bitcast-convert"})  # the same bytes, read as another shape or type
CONTRACTIONS = frozenset({"dot", "convolution"})  # sums of products over contracted dimensions
REDUCTIONS = frozenset({"reduce", "reduce-window"})  # a computation applied along dimensions
PLUMBING = frozenset({"parameter", "tuple", "get-tuple-element", "call"})  # the IR's wiring, not values
# binary operators whose operands may swap; on integers also associative (wrapping), so a reduce
# by one of them does not depend on the order of the elements it reduces
COMMUTATIVE = ("add", "multiply", "maximum", "minimum", "and", "or", "xor")

COMPARISON_DIRECTIONS = ("EQ", "NE", "LT", "LE", "GT", "GE")

# Ops XLA prints that actgen deliberately does not handle; named in the error so
# the user knows it is a known limitation, not a typo.
KNOWN_UNSUPPORTED = frozenset({
    "while", "conditional", "custom-call", "sort", "scatter", "gather", "rng",
    "rng-bit-generator", "all-reduce", "all-gather", "reduce-scatter", "all-to-all",
    "collective-permute", "send", "recv", "infeed", "outfeed", "map",
    "select-and-scatter", "batch-norm-training", "batch-norm-inference", "fft",
    "triangular-solve", "cholesky", "bitcast", "reduce-precision", "after-all",
    "partition-id", "replica-id", "domain", "add-dependency", "optimization-barrier",
    "real", "imag", "complex", "dynamic-reshape", "set-dimension-size", "get-dimension-size",
    "stochastic-convert", "top-k",
})

