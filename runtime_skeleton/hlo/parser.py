"""HLO text -> IR Module: a hand-written recursive-descent parser.

Two phases. The syntax phase (``_Parser``) reads tokens into raw records,
evaluating shapes, attributes and literals as it goes. The check phase
(``_Checker``) resolves names, orders computations by their calls so that any
text order works, and type-checks every instruction with shape inference.
Every problem is an ``HloError`` located at the offending token.

Attribute policy: the attributes in ``SKIPPED_ATTRS`` (metadata, sharding,
backend_config, ...) never change an op's meaning and are skipped anywhere.
An attribute actgen does not know is an error on ops whose meaning depends on
attributes (those in ``OP_ATTRS``: dot, convolution, reduce, slice, ...) and is
skipped on the others (elementwise ops, parameter, constant, tuple, ...).
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import HloError, SourceLoc, read_source
from ..ir.attrs import ConvDimLabels, Literal, PadDim, SliceDim, Window, WindowDim
from ..ir.dtypes import DTYPES, DType
from ..ir.graph import Computation, Instruction, Module
from ..ir.ops import ALL_OPS, COMPARISON_DIRECTIONS, KNOWN_UNSUPPORTED
from ..ir.shape_inference import ShapeError, check_operand_count, infer_type
from ..ir.types import Layout, TensorType, TupleType, Type
from ..symbolic import Z3Algebra
from .lexer import EOF, IDENT, NUMBER, PUNCT, STRING, Source, Token, tokenize

# Attributes that never change what an op computes.
SKIPPED_ATTRS = frozenset({
    "metadata", "sharding", "frontend_attributes", "backend_config", "operand_precision",
    "precision_config", "algorithm", "result_accuracy", "origin", "statistics",
    "control-predecessors", "parameter_replication", "inferred_dimension", "kind",
})

_DOT_DIMS = ("lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims", "rhs_contracting_dims")

# Semantic attributes per op: (required, optional).
OP_ATTRS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    op: (frozenset(req), frozenset(opt)) for op, req, opt in [
        ("broadcast", {"dimensions"}, ()),
        ("transpose", {"dimensions"}, ()),
        ("reverse", {"dimensions"}, ()),
        ("concatenate", {"dimensions"}, ()),
        ("reduce", {"dimensions", "to_apply"}, ()),
        ("reduce-window", {"window", "to_apply"}, ()),
        ("slice", {"slice"}, ()),
        ("dynamic-slice", {"dynamic_slice_sizes"}, ()),
        ("pad", {"padding"}, ()),
        ("iota", {"iota_dimension"}, ()),
        ("get-tuple-element", {"index"}, ()),
        ("compare", {"direction"}, {"type"}),
        ("call", {"to_apply"}, ()),
        ("dot", (), _DOT_DIMS),
        ("convolution", {"dim_labels"}, {"window", "feature_group_count", "batch_group_count"}),
    ]
}

# Defaults stored when an optional attribute is absent, so that equal meaning is equal IR.
_DEFAULTS: dict[str, dict[str, Any]] = {
    "dot": {k: () for k in _DOT_DIMS},
    "convolution": {"window": Window(()), "feature_group_count": 1, "batch_group_count": 1},
}

COMPARISON_TYPES = frozenset({"FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED", "PARTIALORDER"})
_WINDOW_FIELDS = ("size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal")
_NAME_GLUE = frozenset({"-", "."})
_SPAN_STOP = frozenset({",", "}", "]", ")", "{"})
_MAX_INT_DIGITS = 1000
MAX_RANK = 64  # dimensions of a shape (numpy's limit; docs/limits.md)
MAX_TILE = 1 << 16  # a layout tile's dimension (docs/limits.md)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _no_layout(t: Type) -> Type:
    if isinstance(t, TensorType):
        return TensorType(t.dtype, t.shape)
    return TupleType(tuple(_no_layout(e) for e in t.elements))


def _int_value(text: str) -> int | None:
    if len(text) > _MAX_INT_DIGITS:
        return None
    if text.isdigit():
        return int(text)
    if text[:2] in ("0x", "0X"):
        return int(text, 16)
    return None


# ---------------------------------------------------------------- raw syntax records


@dataclass
class _Operand:
    name: str
    loc: SourceLoc
    type: Type | None = None  # XLA dumps may annotate operands: add(f32[4] %a, ...)
    type_loc: SourceLoc | None = None


@dataclass
class _RawInstruction:
    name: str
    loc: SourceLoc
    root_loc: SourceLoc | None
    type: Type
    type_loc: SourceLoc
    opcode: str
    opcode_loc: SourceLoc
    operands: list[_Operand] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    attr_locs: dict[str, SourceLoc] = field(default_factory=dict)


@dataclass
class _RawComputation:
    name: str
    loc: SourceLoc
    entry_loc: SourceLoc | None
    brace_loc: SourceLoc
    signature: tuple[list[Type], Type, SourceLoc] | None
    instructions: list[_RawInstruction]


@dataclass
class _RawModule:
    name: str
    loc: SourceLoc
    entry_layout: tuple[list[Type], Type, SourceLoc] | None
    computations: list[_RawComputation]


# ---------------------------------------------------------------- syntax phase


class _Parser:
    def __init__(self, src: Source, tokens: list[Token], symbols: Mapping[str, Any]):
        self.src = src
        self.tokens = tokens
        self.symbols = symbols
        self.pos = 0

    # -- token helpers

    def peek(self, k: int = 0) -> Token:
        i = self.pos + k  # pos never passes the final EOF token
        return self.tokens[i] if i < len(self.tokens) else self.tokens[-1]

    def next(self) -> Token:
        t = self.tokens[self.pos]
        if t.kind != EOF:
            self.pos += 1
        return t

    def at(self, text: str) -> bool:
        return self.peek().is_punct(text)

    def accept(self, text: str) -> Token | None:
        return self.next() if self.at(text) else None

    def expect(self, text: str, context: str = "") -> Token:
        t = self.peek()
        if not t.is_punct(text):
            raise self.error(f"expected '{text}'{context}, found {t.describe()}", t)
        return self.next()

    def loc(self, tok: Token) -> SourceLoc:
        return self.src.loc(tok.start)

    def error(self, message: str, tok: Token) -> HloError:
        return HloError(message, self.loc(tok))

    def _unterminated(self, open_tok: Token, what: str) -> HloError:
        return self.error(f"unterminated '{{': {what} is never closed", open_tok)

    # -- names: tokens glued without whitespace (%get-tuple-element.3)

    def _name_end(self, i: int) -> int | None:
        t = self.tokens[i]
        if t.is_punct("%"):
            i += 1
            if self.tokens[i].kind != IDENT or self.tokens[i].start != t.end:
                return None
        elif t.kind != IDENT:
            return None
        end = self.tokens[i].end
        i += 1
        while True:
            t = self.tokens[i]
            glue = t.kind in (IDENT, NUMBER) or (t.kind == PUNCT and t.text in _NAME_GLUE)
            if t.start != end or not glue:
                return i
            end = t.end
            i += 1

    def parse_name(self, what: str) -> tuple[str, Token]:
        first = self.peek()
        j = self._name_end(self.pos)
        if j is None:
            raise self.error(f"expected {what}, found {first.describe()}", first)
        start = self.tokens[self.pos + 1].start if first.is_punct("%") else first.start
        self.pos = j
        return self.src.text[start:self.tokens[j - 1].end], first

    # -- integers and dimension expressions

    def parse_int(self, what: str) -> int:
        first = self.peek()
        neg = self.accept("-")
        t = self.peek()
        value = _int_value(t.text) if t.kind == NUMBER else None
        if value is None:
            raise self.error(f"expected an integer {what}, found {t.describe()}", first if neg else t)
        if value >= 2**63:  # XLA's integer attributes are int64
            raise self.error(f"integer {what} does not fit in int64", first if neg else t)
        self.next()
        return -value if neg else value

    def parse_expr(self) -> Any:
        """Integer expression: ints, symbol names, + - * / (floor) %, parentheses."""
        value = self._term()
        while self.at("+") or self.at("-"):
            op = self.next()
            rhs = self._term()
            value = value + rhs if op.text == "+" else value - rhs
        return value

    def _term(self) -> Any:
        value = self._unary()
        while self.at("*") or self.at("/") or self.at("%"):
            op = self.next()
            rhs = self._unary()
            if op.text == "*":
                value = value * rhs
                if _is_int(value) and abs(value) >= 2**63:  # XLA sizes are int64
                    raise self.error(f"dimension expression overflows int64 at {op.describe()}", op)
                continue
            both_int = _is_int(value) and _is_int(rhs)
            if both_int and rhs == 0:
                raise self.error("division by zero in dimension expression", op)
            if both_int:
                value = value % rhs if op.text == "%" else value // rhs
            else:  # z3 terms: Python's floor division, as the generated code divides (symbolic.Z3Algebra)
                z = Z3Algebra()  # z3 is imported only where symbols are z3 terms
                value = z.mod(value, rhs) if op.text == "%" else z.div(value, rhs)
        return value

    def _unary(self) -> Any:
        if self.accept("-"):
            return -self._unary()
        t = self.peek()
        if t.is_punct("("):
            self.next()
            value = self.parse_expr()
            self.expect(")", " to close '('")
            return value
        if t.kind == NUMBER:
            value = _int_value(t.text)
            if value is None:
                raise self.error(f"expected an integer, found {t.describe()}", t)
            self.next()
            return value
        if t.kind == IDENT:
            if t.text not in self.symbols:
                raise self.error(f"unknown dimension name '{t.text}'", t)
            self.next()
            return self.symbols[t.text]
        raise self.error(f"expected an integer, found {t.describe()}", t)

    def sub_expr(self, start: int, end: int) -> Any:
        """Evaluate the expression in ``src.text[start:end]`` (inside a raw span)."""
        sub = _Parser(self.src, tokenize(self.src, start, end), self.symbols)
        value = sub.parse_expr()
        if sub.peek().kind != EOF:
            raise sub.error(f"unexpected {sub.peek().describe()} in dimension expression", sub.peek())
        return value

    # -- types

    def parse_type(self) -> Type:
        t = self.peek()
        if t.is_punct("("):
            self.next()
            elements: list[Type] = []
            if not self.at(")"):
                elements.append(self.parse_type())
                while self.accept(","):
                    elements.append(self.parse_type())
            self.expect(")", " to close tuple type")
            return TupleType(tuple(elements))
        if t.kind != IDENT or not self.peek(1).is_punct("["):
            raise self.error(f"expected a type, found {t.describe()}", t)
        if t.text not in DTYPES:
            raise self.error(f"unknown element type '{t.text}'", t)
        self.next()
        self.next()
        dims: list[Any] = []
        if not self.at("]"):
            dims.append(self._parse_dim())
            while self.accept(","):
                dims.append(self._parse_dim())
        close = self.expect("]", " to close shape")
        if len(dims) > MAX_RANK:
            raise self.error(f"a shape of rank {len(dims)}: actgen handles at most {MAX_RANK} dimensions", t)
        if all(_is_int(d) for d in dims) and math.prod(dims) >= 2**63:
            raise self.error(f"a shape of {math.prod(dims):.3g} elements: the count does not fit in int64", close)
        layout = None
        if self.at("{") and (self.peek(1).kind == NUMBER or self.peek(1).text in (":", "}")):
            layout = self._parse_layout(len(dims))
        return TensorType(DTYPES[t.text], tuple(dims), layout)

    def _parse_dim(self) -> Any:
        t = self.peek()
        value = self.parse_expr()
        if _is_int(value) and value < 0:
            raise self.error(f"dimension size {value} is negative", t)
        if _is_int(value) and value >= 2**63:
            raise self.error("dimension size does not fit in int64", t)
        return value

    def _parse_layout(self, rank: int) -> Layout:
        open_tok = self.next()
        minor_to_major: list[int] = []
        if self.peek().kind == NUMBER:
            minor_to_major.append(self.parse_int("in layout"))
            while self.accept(","):
                minor_to_major.append(self.parse_int("in layout"))
        tiles: list[tuple[int, ...]] = []
        if self.accept(":"):
            while not self.at("}"):
                item = self.next()
                if item.kind not in (IDENT, PUNCT) or item.is_punct("{"):
                    raise self.error(f"unexpected {item.describe()} in layout", item)
                if not self.at("("):
                    found = self.peek()
                    raise self.error(f"expected '(' after layout item {item.describe()}, "
                                     f"found {found.describe()}", found)
                while self.at("("):
                    group = self._layout_group(is_tile=item.text == "T")
                    if item.text == "T":
                        tiles.append(group)
        if not self.at("}"):
            if self.peek().kind == EOF:
                raise self._unterminated(open_tok, "layout")
            raise self.error(f"expected ',' or '}}' in layout, found {self.peek().describe()}", self.peek())
        self.next()
        if sorted(minor_to_major) != list(range(rank)):
            text = self.src.text[open_tok.start:self.tokens[self.pos - 1].end]
            raise self.error(f"layout {text} is not a permutation of the {rank} dimensions of its shape", open_tok)
        return Layout(tuple(minor_to_major), tuple(tiles))

    def _layout_group(self, is_tile: bool) -> tuple[int, ...]:
        """One parenthesised group after a layout item: T(8,128), E(16), S(1), ..."""
        self.next()
        values: list[int] = []
        while not self.at(")"):
            t = self.peek()
            if t.kind == EOF:
                raise self.error("unterminated '(' in layout", t)
            if t.is_punct("*") and is_tile:
                raise self.error("tile dimension '*' is not supported", t)
            if t.kind == NUMBER:
                values.append(self.parse_int("in layout"))
                if is_tile and not 1 <= values[-1] <= MAX_TILE:
                    raise self.error(f"tile dimension {values[-1]} is not between 1 and {MAX_TILE}", t)
            else:
                self.next()  # separators and the contents of non-tile items
        self.next()
        return tuple(values)

    # -- literals

    def parse_literal(self, ty: Type) -> Literal:
        start = self.peek()
        if isinstance(ty, TupleType):
            raise self.error("tuple constants are not supported", start)
        if not all(_is_int(d) for d in ty.shape):
            raise self.error(f"constant shape must be concrete, got {ty}", start)
        tree = self._literal_braces(1, max(ty.rank, 1)) if self.at("{") else self._literal_leaf()
        leaves = _literal_leaves(tree, ty.shape)
        if leaves is None:
            count = sum(1 for _ in _iter_leaves(tree))
            if count != ty.size:
                raise self.error(f"constant has {count} element{'s' * (count != 1)} but {ty} needs {ty.size}", start)
            raise self.error(f"constant's nesting does not match its type {ty}", start)
        values = [self._literal_value(neg, tok, ty.dtype) for neg, tok in leaves]
        try:
            return Literal(ty.dtype, to_dtype_array(values, ty.dtype).reshape(ty.shape))
        except ValueError:  # numpy cannot even describe an empty array of absurd dimensions
            raise self.error(f"constant type {ty} is too large", start) from None

    def _literal_braces(self, depth: int, max_depth: int) -> list:
        open_tok = self.next()
        if depth > max_depth:
            raise self.error(f"constant has more nesting than its rank-{max_depth} type", open_tok)
        items: list = []
        if not self.at("}"):
            while True:
                items.append(self._literal_braces(depth + 1, max_depth) if self.at("{") else self._literal_leaf())
                if not self.accept(","):
                    break
        if self.peek().kind == EOF:
            raise self._unterminated(open_tok, "constant")
        self.expect("}", " or ',' in constant")
        return items

    def _literal_leaf(self) -> tuple[bool, Token]:
        neg = self.accept("-") is not None
        t = self.peek()
        if t.is_punct(".") and self.peek(1).is_punct("."):
            raise self.error("constant is elided as '{...}'; print it with print_large_constants", t)
        if not (t.kind == NUMBER or (t.kind == IDENT and t.text in ("inf", "nan", "true", "false"))):
            raise self.error(f"expected a literal value, found {t.describe()}", t)
        self.next()
        if t.text == "nan" and self.at("(") and self.peek().start == t.end:  # nan(0x...) payload
            open_tok = self.next()
            while not self.accept(")"):
                if self.next().kind == EOF:
                    raise self.error("unterminated '(' in NaN payload", open_tok)
        return neg, t

    def _literal_value(self, neg: bool, tok: Token, dt: DType) -> Any:
        text = tok.text

        def bad() -> HloError:
            return self.error(f"bad {dt} literal '{'-' * neg}{text}'", tok)

        if dt.is_pred:
            if neg or text not in ("true", "false", "1", "0"):
                raise bad()
            return text in ("true", "1")
        if dt.is_int:
            value = _int_value(text) if tok.kind == NUMBER else None
            if value is None:
                raise bad()
            value = -value if neg else value
            info = np.iinfo(dt.np)
            if not info.min <= value <= info.max:
                raise self.error(f"literal {value} is out of range for {dt}", tok)
            return value
        if text == "nan":
            return math.nan  # every NaN reads as the canonical quiet NaN
        if text == "inf":
            value = math.inf
        elif tok.kind == NUMBER:
            as_int = _int_value(text) if text[:2] in ("0x", "0X") else None
            value = float(as_int) if as_int is not None else float(text)
            with np.errstate(over="ignore"):  # as XLA: a finite literal must round to a finite value of its type
                rounded = float(np.asarray(value).astype(dt.np))
            if math.isinf(rounded):  # (3.40282347e+38, f32's largest as printed, rounds down to it)
                raise self.error(f"literal {'-' if neg else ''}{text} is out of range for {dt}", tok)
        else:
            raise bad()
        return -value if neg else value

    # -- raw spans: 0_0x1_2_1, 3x3, b01f_01io->b01f

    def take_span(self) -> tuple[str, int]:
        """Tokens glued together without whitespace (anything inside parentheses too)."""
        first = self.peek()
        glued = self.pos > 0 and self.tokens[self.pos - 1].end == first.start
        if first.kind == EOF or not glued or (first.kind == PUNCT and first.text in _SPAN_STOP):
            return "", first.start
        depth, end, i = 0, first.start, self.pos
        while True:
            t = self.tokens[i]
            if t.kind == EOF:
                break
            if depth == 0 and i != self.pos and (t.start != end or (t.kind == PUNCT and t.text in _SPAN_STOP)):
                break
            if t.is_punct("("):
                depth += 1
            elif t.is_punct(")"):
                depth -= 1
            end, i = t.end, i + 1
        self.pos = i
        return self.src.text[first.start:end], first.start

    def _x_list(self, what: str, *, parts: int = 1, optional: int = 0,
                allow_empty: bool = False) -> list[tuple[Any, ...]]:
        """``AxBx...`` where each item is ``parts`` values joined by ``_``, plus up
        to ``optional`` more: ``3x3``, ``1_1x0_1``, ``0_0x1_2_1``."""
        text, offset = self.take_span()
        if not text:
            if allow_empty:
                return []
            raise self.error(f"expected a value for {what}, found {self.peek().describe()}", self.peek())
        reader = _SpanReader(self, text, offset, what)
        items = []
        while True:
            values = [reader.value()]
            for k in range(1, parts + optional):
                if k >= parts and not reader.at("_"):
                    break
                reader.expect("_")
                values.append(reader.value())
            items.append(tuple(values))
            if reader.at_end():
                return items
            reader.expect("x")

    # -- attributes

    def parse_attribute(self, opcode: str, attrs: dict[str, Any], locs: dict[str, SourceLoc]) -> None:
        key, key_tok = self.parse_name("an attribute name")
        self.expect("=", f" after attribute '{key}'")
        if key == "calls":
            key = "to_apply"
        if key in attrs or key in locs:
            raise self.error(f"duplicate attribute '{key}'", key_tok)
        allowed = OP_ATTRS.get(opcode)
        if key in SKIPPED_ATTRS or (key not in _ATTR_PARSERS and allowed is None):
            self.skip_value(key)
            return
        if key not in _ATTR_PARSERS:
            raise self.error(f"unknown attribute '{key}' for '{opcode}'", key_tok)
        if allowed is None or key not in allowed[0] | allowed[1]:
            raise self.error(f"attribute '{key}' is not valid for '{opcode}'", key_tok)
        value_tok = self.peek()
        attrs[key] = _ATTR_PARSERS[key](self)
        locs[key] = self.loc(value_tok)

    def skip_value(self, key: str) -> None:
        t = self.peek()
        if t.is_punct("{"):
            self.next()
            depth = 1
            while depth:
                u = self.next()
                if u.kind == EOF:
                    raise self._unterminated(t, f"attribute '{key}'")
                depth += u.is_punct("{") - u.is_punct("}")
        elif t.kind == STRING:
            self.next()
        elif not self.take_span()[0]:
            raise self.error(f"expected a value for attribute '{key}', found {t.describe()}", t)

    def _braced(self, item: Callable[[], Any], what: str) -> tuple[Any, ...]:
        open_tok = self.expect("{", f" to start {what}")
        items = []
        if not self.at("}"):
            items.append(item())
            while self.accept(","):
                items.append(item())
        if self.peek().kind == EOF:
            raise self._unterminated(open_tok, what)
        self.expect("}", f" or ',' in {what}")
        return tuple(items)

    def _int_list(self) -> tuple[int, ...]:
        return self._braced(lambda: self.parse_int("dimension number"), "dimension list")

    def _expr_list(self) -> tuple[Any, ...]:
        return self._braced(self.parse_expr, "size list")

    def _slice(self) -> tuple[SliceDim, ...]:
        def one() -> SliceDim:
            self.expect("[", " to start a slice [start:limit:stride]")
            start = self.parse_expr()
            self.expect(":", " in slice")
            limit = self.parse_expr()
            stride = self.parse_expr() if self.accept(":") else 1
            self.expect("]", " to close slice")
            return SliceDim(start, limit, stride)
        return self._braced(one, "slice")

    def _padding(self) -> tuple[PadDim, ...]:
        items = self._x_list("padding lo_hi[_interior]", parts=2, optional=1, allow_empty=True)
        return tuple(PadDim(*v) for v in items)

    def _window(self) -> Window:
        open_tok = self.expect("{", " to start window")
        fields: dict[str, tuple[list[tuple[Any, ...]], Token]] = {}
        while not self.at("}"):
            if self.peek().kind == EOF:
                raise self._unterminated(open_tok, "window")
            key, key_tok = self.parse_name("a window field")
            if key not in _WINDOW_FIELDS:
                raise self.error(f"unknown window field '{key}' (expected one of {', '.join(_WINDOW_FIELDS)})", key_tok)
            if key in fields:
                raise self.error(f"duplicate window field '{key}'", key_tok)
            self.expect("=", f" after window field '{key}'")
            fields[key] = (self._x_list(f"window {key}", parts=2 if key == "pad" else 1), key_tok)
        self.next()
        if not fields:
            return Window(())
        if "size" not in fields:
            raise self.error("window needs size=", open_tok)
        n = len(fields["size"][0])
        for key, (values, key_tok) in fields.items():
            if len(values) != n:
                raise self.error(f"window {key} has {len(values)} dimensions, size has {n}", key_tok)
            if key == "rhs_reversal" and any(v[0] not in (0, 1) for v in values):
                raise self.error("window rhs_reversal values must be 0 or 1", key_tok)

        def get(key: str, k: int, default: tuple[Any, ...]) -> tuple[Any, ...]:
            return fields[key][0][k] if key in fields else default

        return Window(tuple(
            WindowDim(
                size=get("size", k, (1,))[0], stride=get("stride", k, (1,))[0],
                pad_lo=get("pad", k, (0, 0))[0], pad_hi=get("pad", k, (0, 0))[1],
                lhs_dilate=get("lhs_dilate", k, (1,))[0], rhs_dilate=get("rhs_dilate", k, (1,))[0],
                reversal=bool(get("rhs_reversal", k, (0,))[0]),
            )
            for k in range(n)
        ))

    def _dim_labels(self) -> ConvDimLabels:
        t = self.peek()
        text, _ = self.take_span()
        m = re.fullmatch(r"([0-9a-z]+)_([0-9a-z]+)->([0-9a-z]+)", text)
        if not m:
            raise self.error(f"bad dim_labels '{text}': expected like b01f_01io->b01f", t)
        lhs, rhs, out = m.groups()
        n = len(lhs) - 2
        spatial = {str(k) for k in range(n)}
        for labels, special in ((lhs, "bf"), (rhs, "io"), (out, "bf")):
            if len(labels) != n + 2 or set(labels) != spatial | set(special):
                raise self.error(f"bad dim_labels '{text}': '{labels}' must name {special[0]}, {special[1]} "
                                 f"and spatial dimensions 0..{n - 1} once each", t)
        return ConvDimLabels(lhs, rhs, out)

    def _ident_in(self, choices: Any, what: str) -> str:
        t = self.peek()
        if t.kind != IDENT or t.text not in choices:
            raise self.error(f"unknown {what} {t.describe()} (expected one of {', '.join(sorted(choices))})", t)
        return self.next().text

    # -- instructions, computations, module

    def parse_instruction(self) -> _RawInstruction:
        root_tok = self.next() if self.peek().is_ident("ROOT") else None
        name, name_tok = self.parse_name("an instruction name")
        self.expect("=", f" after instruction name '{name}'")
        type_tok = self.peek()
        ty = self.parse_type()
        op_tok = self.peek()
        opcode, _ = self.parse_name("an opcode")
        if opcode == "fusion":  # XLA's optimized HLO: a call of its fused computation (``kind`` says how)
            opcode = "call"
        if opcode in KNOWN_UNSUPPORTED:
            raise self.error(f"HLO op '{opcode}' is not supported by actgen", op_tok)
        if opcode not in ALL_OPS:
            raise self.error(f"unknown HLO op '{opcode}'", op_tok)
        ins = _RawInstruction(name, self.loc(name_tok), self.loc(root_tok) if root_tok else None, ty,
                              self.loc(type_tok), opcode, self.loc(op_tok))
        self.expect("(", f" after opcode '{opcode}'")
        if opcode == "parameter":
            ins.attr_locs["parameter_number"] = self.loc(self.peek())
            number = self.parse_int("parameter number")
            if number < 0:
                raise HloError(f"parameter number {number} is negative", ins.attr_locs["parameter_number"])
            ins.attrs["parameter_number"] = number
        elif opcode == "constant":
            ins.attrs["literal"] = self.parse_literal(ty)
        elif not self.at(")"):
            ins.operands.append(self._parse_operand())
            while self.accept(","):
                ins.operands.append(self._parse_operand())
        self.expect(")", f" to close the operands of '{opcode}'")
        while self.accept(","):
            self.parse_attribute(opcode, ins.attrs, ins.attr_locs)
        required, _ = OP_ATTRS.get(opcode, ((), ()))
        for key in sorted(required):
            if key not in ins.attrs:
                raise HloError(f"'{opcode}' needs attribute '{key}'", ins.opcode_loc)
        for key, value in _DEFAULTS.get(opcode, {}).items():
            ins.attrs.setdefault(key, value)
        return ins

    def _parse_operand(self) -> _Operand:
        t = self.peek()
        ty, type_loc = None, None
        if t.is_punct("(") or (t.kind == IDENT and self.peek(1).is_punct("[")):
            type_loc = self.loc(t)
            ty = self.parse_type()
        name, name_tok = self.parse_name("an operand name")
        return _Operand(name, self.loc(name_tok), ty, type_loc)

    def _parse_signature(self) -> tuple[list[Type], Type, SourceLoc]:
        open_tok = self.next()
        params: list[Type] = []
        if not self.at(")"):
            while True:
                self.parse_name("a parameter name")
                self.expect(":", " after parameter name")
                params.append(self.parse_type())
                if not self.accept(","):
                    break
        self.expect(")", " to close the parameter list")
        self.expect("->", " after the parameter list")
        return params, self.parse_type(), self.loc(open_tok)

    def parse_computation(self) -> _RawComputation:
        entry_tok = self.next() if self.peek().is_ident("ENTRY") else None
        name, name_tok = self.parse_name("a computation name")
        signature = self._parse_signature() if self.at("(") else None
        while self.accept(","):  # e.g. execution_thread="main"
            key, _ = self.parse_name("an attribute name")
            self.expect("=", f" after attribute '{key}'")
            self.skip_value(key)
        open_tok = self.peek()
        if not open_tok.is_punct("{"):
            raise self.error(f"expected '{{' to start computation '{name}', found {open_tok.describe()}", open_tok)
        self.next()
        instructions = []
        while not self.at("}"):
            if self.peek().kind == EOF:
                raise self._unterminated(open_tok, f"computation '{name}'")
            instructions.append(self.parse_instruction())
        self.next()
        return _RawComputation(name, self.loc(name_tok), self.loc(entry_tok) if entry_tok else None,
                               self.loc(open_tok), signature, instructions)

    def _instruction_ahead(self) -> bool:
        if self.peek().is_ident("ROOT"):
            return True
        j = self._name_end(self.pos)
        return j is not None and self.tokens[j].is_punct("=")

    def parse_module(self, default_name: str) -> _RawModule:
        first = self.peek()
        name, entry_layout = default_name, None
        if first.is_ident("HloModule"):
            self.next()
            name, _ = self.parse_name("a module name")
            while self.accept(","):
                key, _ = self.parse_name("a module attribute")
                self.expect("=", f" after attribute '{key}'")
                if key == "entry_computation_layout":
                    entry_layout = self._parse_entry_layout()
                else:
                    self.skip_value(key)
        self._skip_debug_sections()
        if self.peek().kind == EOF:
            raise self.error("expected a computation or an instruction, found end of input", self.peek())
        if self._instruction_ahead():  # a bare body: instructions without computation braces
            body_tok = self.peek()
            instructions = []
            while self.peek().kind != EOF:
                instructions.append(self.parse_instruction())
            comp = _RawComputation(default_name, self.loc(body_tok), None, self.loc(body_tok), None, instructions)
            return _RawModule(name, self.loc(first), entry_layout, [comp])
        computations = []
        while self.peek().kind != EOF:
            computations.append(self.parse_computation())
        return _RawModule(name, self.loc(first), entry_layout, computations)

    def _skip_debug_sections(self) -> None:
        """XLA's source-location tables between the header and the computations (an
        ``--xla_dump_to`` file): ``FileNames`` then lines ``1 "x.py"``, ``StackFrames`` then
        lines ``1 {file_location_id=1 parent_frame_id=1}``. A computation of that name is
        followed by ``(`` or ``{``, not by an entry number."""
        while self.peek().kind == IDENT and self.peek().text in DEBUG_SECTIONS and self.peek(1).kind == NUMBER:
            section = self.next().text
            while self.peek().kind == NUMBER:
                self.parse_int(f"an entry number in {section}")
                self.skip_value(f"{section} entry")

    def _parse_entry_layout(self) -> tuple[list[Type], Type, SourceLoc]:
        open_tok = self.expect("{", " to start entry_computation_layout")
        self.expect("(", " to start the parameter types")
        params: list[Type] = []
        if not self.at(")"):
            params.append(self.parse_type())
            while self.accept(","):
                params.append(self.parse_type())
        self.expect(")", " to close the parameter types")
        self.expect("->", " after the parameter types")
        result = self.parse_type()
        self.expect("}", " to close entry_computation_layout")
        return params, result, self.loc(open_tok)


DEBUG_SECTIONS = frozenset({"FileNames", "FunctionNames", "FileLocations", "StackFrames"})

_ATTR_PARSERS: dict[str, Callable[[_Parser], Any]] = {
    "dimensions": _Parser._int_list,
    **{k: _Parser._int_list for k in _DOT_DIMS},
    "slice": _Parser._slice,
    "dynamic_slice_sizes": _Parser._expr_list,
    "padding": _Parser._padding,
    "window": _Parser._window,
    "dim_labels": _Parser._dim_labels,
    "to_apply": lambda p: p.parse_name("a computation name")[0],
    "direction": lambda p: p._ident_in(COMPARISON_DIRECTIONS, "comparison direction"),
    "type": lambda p: p._ident_in(COMPARISON_TYPES, "comparison type"),
    **{k: (lambda key: lambda p: p.parse_int(f"for {key}"))(k)
       for k in ("iota_dimension", "index", "feature_group_count", "batch_group_count")},
}


class _SpanReader:
    """Character-level reader of a raw span such as ``0_-1x(n-1)_2_1``.

    Items are integers, parenthesised expressions or symbol names; a name is the
    longest prefix that is a symbol, so ``nx2`` reads as ``n`` ``x`` ``2``."""

    _INT = re.compile(r"-?[0-9]+")
    _WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")

    def __init__(self, parser: _Parser, text: str, offset: int, what: str):
        self.p, self.text, self.offset, self.what, self.i = parser, text, offset, what, 0

    def error(self, message: str) -> HloError:
        return self.p.src.error(message, self.offset + self.i)

    def at_end(self) -> bool:
        return self.i >= len(self.text)

    def at(self, ch: str) -> bool:
        return self.text.startswith(ch, self.i)

    def found(self) -> str:
        return "end of value" if self.at_end() else f"'{self.text[self.i]}'"

    def expect(self, ch: str) -> None:
        if not self.at(ch):
            raise self.error(f"expected '{ch}' in {self.what}, found {self.found()}")
        self.i += 1

    def value(self) -> Any:
        if self.at("("):
            depth = 0
            for j in range(self.i, len(self.text)):
                depth += (self.text[j] == "(") - (self.text[j] == ")")
                if depth == 0:
                    value = self.p.sub_expr(self.offset + self.i + 1, self.offset + j)
                    self.i = j + 1
                    return value
            raise self.error(f"unbalanced '(' in {self.what}")
        if m := self._INT.match(self.text, self.i):
            if len(m.group()) > _MAX_INT_DIGITS:
                raise self.error(f"integer too long in {self.what}")
            self.i = m.end()
            return int(m.group())
        if m := self._WORD.match(self.text, self.i):
            word = m.group()
            for k in range(len(word), 0, -1):
                if word[:k] in self.p.symbols:
                    self.i += k
                    return self.p.symbols[word[:k]]
            raise self.error(f"unknown dimension name '{word[0] + word[1:].split('x')[0]}'")
        raise self.error(f"expected an integer in {self.what}, found {self.found()}")


def _iter_leaves(tree: Any):
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(reversed(node))
        else:
            yield node


def _matches(tree: Any, shape: tuple[int, ...]) -> bool:
    if not shape:
        return not isinstance(tree, list)
    return isinstance(tree, list) and len(tree) == shape[0] and all(_matches(t, shape[1:]) for t in tree)


def _literal_leaves(tree: Any, shape: tuple[int, ...]) -> list | None:
    """Leaves in row-major order if ``tree`` fits ``shape``: nested exactly, or
    one flat list of all elements, or empty braces for a zero-size shape."""
    if _matches(tree, shape):
        return list(_iter_leaves(tree))
    size = math.prod(shape)
    if shape and isinstance(tree, list) and not any(isinstance(t, list) for t in tree) and len(tree) == size:
        return tree
    if shape and size == 0 and isinstance(tree, list) and not any(True for _ in _iter_leaves(tree)):
        return []
    return None


def to_dtype_array(values: list, dt: DType) -> np.ndarray:
    """Python values -> a numpy array of ``dt``, floats rounded to nearest even."""
    if not dt.is_float:
        return np.array(values, dtype=dt.np)
    x = np.array(values, dtype=np.float64)
    with np.errstate(all="ignore"):
        if dt.name != "bf16":
            return x.astype(dt.np)
        # ml_dtypes rounds f64 -> f32 -> bf16, which double-rounds; rounding to odd
        # in the f32 step makes the second rounding exact.
        f = x.astype(np.float32)
        inexact = np.isfinite(x) & (f.astype(np.float64) != x)
        f = np.where(inexact & (np.abs(f.astype(np.float64)) > np.abs(x)), np.nextafter(f, np.float32(0)), f)
        bits = f.view(np.uint32) | inexact.astype(np.uint32)
        return bits.view(np.float32).astype(dt.np)


# ---------------------------------------------------------------- check phase


class _Checker:
    def __init__(self, raw: _RawModule, infer_types: bool):
        self.raw = raw
        self.infer = infer_types
        self.by_name: dict[str, _RawComputation] = {}

    def run(self) -> Module:
        for c in self.raw.computations:
            if c.name in self.by_name:
                raise HloError(f"duplicate computation name '{c.name}'", c.loc)
            self.by_name[c.name] = c
        entries = [c for c in self.raw.computations if c.entry_loc]
        if len(entries) > 1:
            raise HloError("more than one ENTRY computation", entries[1].entry_loc)
        entry = entries[0] if entries else self.raw.computations[-1]
        done: dict[str, Computation] = {}
        for c in self._call_order():
            done[c.name] = self._check_computation(c, done)
        module = Module(self.raw.name, {c.name: done[c.name] for c in self.raw.computations}, entry.name, self.raw.loc)
        if self.raw.entry_layout and self.infer:
            params, result, loc = self.raw.entry_layout
            got_params, got_result = module.parameter_types, module.result_type
            if len(params) != len(got_params) or not all(a.same_shape_dtype(b) for a, b in zip(params, got_params)) \
                    or not result.same_shape_dtype(got_result):
                raise HloError(f"entry_computation_layout {_sig(params, result)} does not match entry computation "
                               f"'{entry.name}' {_sig(got_params, got_result)}", loc)
        return module

    def _call_order(self) -> list[_RawComputation]:
        """Computations with every callee before its callers."""
        order: list[_RawComputation] = []
        state: dict[str, str] = {}

        def visit(c: _RawComputation) -> None:
            state[c.name] = "active"
            for ins in c.instructions:
                callee = ins.attrs.get("to_apply")
                if callee is None:
                    continue
                loc = ins.attr_locs["to_apply"]
                if callee not in self.by_name:
                    raise HloError(f"unknown computation '{callee}' in to_apply", loc)
                if state.get(callee) == "active":
                    raise HloError(f"computation '{callee}' calls itself (recursion is not allowed)", loc)
                if callee not in state:
                    visit(self.by_name[callee])
            state[c.name] = "done"
            order.append(c)

        for c in self.raw.computations:
            if c.name not in state:
                visit(c)
        return order

    def _check_computation(self, c: _RawComputation, done: Mapping[str, Computation]) -> Computation:
        if not c.instructions:
            raise HloError(f"computation '{c.name}' has no instructions", c.brace_loc)
        position: dict[str, int] = {}
        for k, ins in enumerate(c.instructions):
            if ins.name in position:
                raise HloError(f"duplicate instruction name '{ins.name}'", ins.loc)
            position[ins.name] = k
        roots = [ins for ins in c.instructions if ins.root_loc]
        if len(roots) > 1:
            raise HloError(f"more than one ROOT in computation '{c.name}'", roots[1].root_loc)
        root = roots[0] if roots else c.instructions[-1]
        self._check_parameters(c)

        types: dict[str, Type] = {}
        built = []
        for ins in c.instructions:
            operand_types = [self._operand_type(op, types, position) for op in ins.operands]
            try:
                check_operand_count(ins.opcode, len(operand_types))
            except ShapeError as e:
                raise HloError(str(e), ins.opcode_loc) from None
            if self.infer:
                self._check_type(ins, operand_types, done)
            types[ins.name] = ins.type
            built.append(Instruction(ins.name, ins.opcode, ins.type, tuple(op.name for op in ins.operands),
                                     ins.attrs, ins.loc))
        comp = Computation(c.name, built, root.name, c.loc)
        if c.signature and self.infer:
            params, result, loc = c.signature
            got = [p.type for p in comp.parameters]
            if len(params) != len(got) or not all(a.same_shape_dtype(b) for a, b in zip(params, got)) \
                    or not result.same_shape_dtype(comp.root_instruction.type):
                raise HloError(f"signature {_sig(params, result)} of computation '{c.name}' does not match its "
                               f"instructions {_sig(got, comp.root_instruction.type)}", loc)
        return comp

    def _check_parameters(self, c: _RawComputation) -> None:
        params = [ins for ins in c.instructions if ins.opcode == "parameter"]
        seen: set[int] = set()
        for p in params:
            n, loc = p.attrs["parameter_number"], p.attr_locs["parameter_number"]
            if n in seen:
                raise HloError(f"duplicate parameter number {n} in computation '{c.name}'", loc)
            if n >= len(params):
                raise HloError(f"parameter number {n} is out of range: computation '{c.name}' has "
                               f"{len(params)} parameter{'s' * (len(params) != 1)}, numbered from 0", loc)
            seen.add(n)

    def _operand_type(self, op: _Operand, types: Mapping[str, Type], position: Mapping[str, int]) -> Type:
        if op.name not in types:
            if op.name in position:
                raise HloError(f"operand '{op.name}' is used before it is defined", op.loc)
            raise HloError(f"undefined operand '{op.name}'", op.loc)
        t = types[op.name]
        if self.infer and op.type is not None and not op.type.same_shape_dtype(t):
            raise HloError(f"operand '{op.name}' is annotated {_no_layout(op.type)} but has type {_no_layout(t)}",
                           op.type_loc)
        return t

    def _check_type(self, ins: _RawInstruction, operand_types: list[Type], done: Mapping[str, Computation]) -> None:
        try:
            inferred = infer_type(ins.opcode, operand_types, ins.attrs, done, declared=ins.type)
        except ShapeError as e:
            raise HloError(str(e), ins.opcode_loc) from None
        except Exception as e:  # a gap in shape inference must still surface as a located error
            raise HloError(f"internal error in shape inference of '{ins.opcode}': {type(e).__name__}: {e}",
                           ins.opcode_loc) from None
        if not inferred.same_shape_dtype(ins.type):
            args = ", ".join(str(_no_layout(t)) for t in operand_types)
            raise HloError(f"type mismatch for '{ins.name}': declared {_no_layout(ins.type)} but "
                           f"{ins.opcode}({args}) gives {inferred}", ins.type_loc)


def _sig(params: list[Type], result: Type) -> str:
    return "(" + ", ".join(str(_no_layout(p)) for p in params) + ") -> " + str(_no_layout(result))


# ---------------------------------------------------------------- public API


def parse_module(
    text: str,
    filename: str = "<string>",
    *,
    symbols: Mapping[str, Any] | None = None,
    start_line: int = 1,
    start_col: int = 1,
    infer_types: bool = True,
    default_name: str = "main",
) -> Module:
    """Parse HLO text as JAX/XLA print it (or a bare list of instructions).

    ``symbols`` lets shapes, slice bounds, dynamic_slice_sizes, padding and
    windows use integer expressions over those names (values may be ints or
    z3 integers; pass ``infer_types=False`` with z3). ``start_line``/``start_col``
    place ``text`` inside an enclosing file for error locations. Raises HloError."""
    src = Source(text, filename, start_line, start_col)
    parser = _Parser(src, tokenize(src), dict(symbols or {}))
    try:
        raw = parser.parse_module(default_name)
    except RecursionError:
        raise parser.error("input is nested too deeply", parser.peek()) from None
    return _Checker(raw, infer_types).run()


def parse_type(
    text: str,
    filename: str = "<string>",
    *,
    symbols: Mapping[str, Any] | None = None,
    start_line: int = 1,
    start_col: int = 1,
) -> Type:
    """Parse one HLO type such as ``bf16[n,64]{1,0}`` or ``(f32[], s32[4])``."""
    src = Source(text, filename, start_line, start_col)
    parser = _Parser(src, tokenize(src), dict(symbols or {}))
    try:
        ty = parser.parse_type()
    except RecursionError:
        raise parser.error("input is nested too deeply", parser.peek()) from None
    if parser.peek().kind != EOF:
        raise parser.error(f"unexpected {parser.peek().describe()} after the type", parser.peek())
    return ty


def parse_file(path: str | Path) -> Module:
    """Parse an .hlo file of HLO text; errors are located in ``path`` (``forms.read_kernel``
    reads every form of kernel file)."""
    return parse_module(read_source(path, HloError), str(path))
