"""Parse a .isa file into an (unchecked) IsaSpec: Lark grammar -> model.

``include "other.isa"`` is resolved relative to the including file; ``const``
names are substituted into every expression and are visible in semantics.
Attribute ranges are left empty here; ``checker.check`` derives them.
"""
from __future__ import annotations

import math
import pathlib
import re
from dataclasses import dataclass, field
from functools import cache

import lark
from lark import Token, Tree

from runtime_skeleton.errors import MAX_BUFFER_BYTES, SourceLoc, read_source, shown_count
from runtime_skeleton.ir.dtypes import dtype as lookup_dtype

from . import expr as E
from .errors import IsaError
from .model import Attribute, Bandwidth, Buffer, Instruction, IsaSpec, Native, Peak, Semantics, Slice

_UNITS = {None: 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "KB": 10**3, "MB": 10**6, "GB": 10**9}
_FREQ = {"Hz": 1.0, "kHz": 1e3, "MHz": 1e6, "GHz": 1e9}
_KEYWORD_HINT = {
    "NAME": "a name", "INT": "an integer", "NUMBER": "a number", "DTYPE": "an element type",
    "HLO_BLOCK": "'{' with HLO semantics", "STRING": "a quoted path", "UNIT": "a size unit",
    "FREQ": "a frequency unit (GHz, MHz)", "COMPOP": "a comparison", "ADDOP": "'+' or '-'",
    "MULOP": "'*', '/' or '%'",
}


_GRAMMAR = (pathlib.Path(__file__).parent / "isa.lark").read_text()
# One piece of a semantics block that is not a brace: a string, a comment (braces in either do
# not count), or any other character: isa.lark's HLO_TEXT, from which HLO_BLOCK is built.
_HLO_TEXT = re.compile(re.search(r"^HLO_TEXT: /(.*)/$", _GRAMMAR, re.M).group(1))  # type: ignore[union-attr]
_CLOSED_STRING = re.compile(r'"(?:[^"\\]|\\(?s:.))*"')


@cache
def _lark() -> lark.Lark:
    return lark.Lark(_GRAMMAR, parser="lalr", propagate_positions=True, maybe_placeholders=True)


def parse_file(path: str | pathlib.Path) -> IsaSpec:
    path = pathlib.Path(path)
    return parse_text(read_source(path, IsaError), str(path))


def parse_text(text: str, filename: str = "<string>") -> IsaSpec:
    """``filename`` names the text in errors and resolves its includes; when it is a file's
    path, that file counts as being read, so an include of it is a cycle."""
    b = _Builder()
    path = pathlib.Path(filename)
    try:
        top = ((str(path.resolve()), filename),) if path.is_file() else ()
    except (OSError, ValueError):  # a name no file system has (too long, a NUL)
        top = ()
    b.load(text, filename, including=top)
    return b.finish(filename)


def _describe_terminal(name: str) -> str:
    if name in _KEYWORD_HINT:
        return _KEYWORD_HINT[name]
    try:
        pattern = _lark().get_terminal(name).pattern
    except KeyError:
        return name.lower()
    return f"'{pattern.value}'" if pattern.type == "str" else name.lower()


MAX_BRACES = 6  # levels of '{' nesting inside a semantics block (isa.lark's HLO_BLOCK; docs/limits.md)


def _scan_block(text: str, start: int) -> tuple[int | None, int | None]:
    """For the semantics block opened at ``text[start]``: how deep its braces nest (None when
    they never close) and where a string or '/*' comment in it is left open (None if none).
    Braces in comments and strings do not count, as in isa.lark's HLO_BLOCK."""
    depth = deepest = 0
    pos = start
    while pos < len(text):
        ch = text[pos]
        if ch in "{}":
            depth += 1 if ch == "{" else -1
            deepest = max(deepest, depth)
            if depth == 0:
                return deepest, None
            pos += 1
            continue
        end = _HLO_TEXT.match(text, pos).end()  # type: ignore[union-attr]  (it matches any non-brace)
        piece = text[pos:end]
        if end == len(text) and (piece[0] == '"' and not _CLOSED_STRING.fullmatch(piece)
                                 or piece.startswith("/*") and (len(piece) < 4 or not piece.endswith("*/"))):
            return None, pos  # an open string or comment runs to the end of the file
        pos = end
    return None, None


def _syntax_error(err: lark.exceptions.LarkError, filename: str, text: str = "") -> IsaError:
    if isinstance(err, lark.UnexpectedToken):
        tok = err.token
        if tok.type == "$END":
            return IsaError("unexpected end of file", SourceLoc(filename, err.line if err.line > 0 else 1, max(err.column, 1)))
        expected = sorted({_describe_terminal(e) for e in err.expected}, key=lambda d: (d[1:2].isalpha(), d))
        hint = f"; expected {', '.join(expected[:8])}" + (" ..." if len(expected) > 8 else "") if expected else ""
        return IsaError(f"unexpected '{tok}'{hint}", SourceLoc(filename, tok.line, tok.column))
    if isinstance(err, lark.UnexpectedCharacters):
        ch = err.char
        depth, open_at = _scan_block(text, err.pos_in_stream) if ch == "{" else (None, None)
        if open_at is not None:
            line = text.count("\n", 0, open_at) + 1
            what = "string" if text[open_at] == '"' else "comment '/*'"
            return IsaError(f"unterminated {what} in semantics block",
                            SourceLoc(filename, line, open_at - text.rfind("\n", 0, open_at)))
        msg = (f"braces nest {depth} levels deep in this semantics block; at most {MAX_BRACES}, the block's own "
               "included"
               if depth is not None and depth > MAX_BRACES else
               "unbalanced '{' in semantics block" if ch == "{" else
               f"unexpected character {ch!r}" if not ch.isprintable() else f"unexpected character '{ch}'")
        return IsaError(msg, SourceLoc(filename, err.line, err.column))
    if isinstance(err, lark.UnexpectedEOF):
        return IsaError("unexpected end of file", SourceLoc(filename, 1, 1))
    return IsaError(str(err), SourceLoc(filename, 1, 1))


_Chain = tuple[tuple[str, str], ...]  # files being read, outermost first: (resolved path, name as shown)

MAX_DEPTH = 200  # levels of nesting in a description's expressions (docs/limits.md)
_CHAINS = frozenset({"or_expr", "and_expr", "comparison", "sum", "product"})  # isa.lark's operator chains
_OPERATORS = frozenset({"ADDOP", "MULOP", "COMPOP"})
_EXPRESSIONS = _CHAINS | {"not_", "power", "neg", "call"}
MAX_BITS = 256  # bits of an integer a description writes, or computes as a constant or with '**'


@dataclass
class _Builder:
    target: str | None = None
    target_loc: SourceLoc | None = None
    constants: dict[str, int] = field(default_factory=dict)
    hbm: Buffer | None = None
    buffers: dict[str, Buffer] = field(default_factory=dict)
    instructions: dict[str, Instruction] = field(default_factory=dict)
    clock_hz: float | None = None
    clock_loc: SourceLoc | None = None
    peaks: list[tuple[Peak, SourceLoc]] = field(default_factory=list)
    bandwidths: list[tuple[Bandwidth, SourceLoc]] = field(default_factory=list)
    native: dict[str, tuple[object, SourceLoc]] = field(default_factory=dict)  # native_* declaration -> value
    filename: str = "<string>"

    def load(self, text: str, filename: str, including: _Chain) -> None:
        """Read ``text`` (the file ``filename``); ``including`` is the chain of files being read,
        outermost first, each (resolved path, name as shown), this one last when it is a file."""
        try:
            tree = _lark().parse(text)
        except lark.exceptions.LarkError as err:
            raise _syntax_error(err, filename, text) from None
        saved, self.filename = self.filename, filename
        self._check_depth(tree)
        for item in tree.children:
            getattr(self, "_" + item.data)(item, including)
        self.filename = saved

    def finish(self, filename: str) -> IsaSpec:
        if self.target is None:
            raise IsaError("missing 'target NAME' declaration", SourceLoc(filename, 1, 1))
        if self.hbm is None:
            raise IsaError("missing 'hbm d0 : SIZE' declaration", SourceLoc(filename, 1, 1))
        if not self.instructions:
            raise IsaError(f"target '{self.target}' declares no instructions", self.target_loc)
        engines = {i.engine for i in self.instructions.values()}
        for p, loc in self.peaks:
            if p.engine not in engines:
                raise IsaError(f"peak names engine '{p.engine}', which no instruction uses "
                               f"(engines: {', '.join(sorted(engines)) or 'none'})", loc)
        buffers = {self.hbm.name, *self.buffers}
        for bw, loc in self.bandwidths:
            for b in (bw.src, bw.dst):
                if b not in buffers:
                    raise IsaError(f"bandwidth names unknown buffer '{b}'", loc)
        native = None
        if self.native:
            got = {k: v for k, (v, _) in self.native.items()}
            native = Native(got.get("native_prelude", ""), got.get("native_flags", ""), got.get("native_cpu", ()))
        return IsaSpec(
            name=self.target, source=filename, constants=dict(self.constants), hbm=self.hbm,
            buffers=dict(self.buffers), instructions=dict(self.instructions), clock_hz=self.clock_hz,
            peaks=tuple(p for p, _ in self.peaks), bandwidths=tuple(b for b, _ in self.bandwidths), native=native,
        )

    # -- helpers ---------------------------------------------------------------
    def _check_depth(self, tree: Tree) -> None:
        """Refuse an expression nested deeper than MAX_DEPTH (a sum of 20,000 terms is that
        deep), located at its outermost part past the limit, before anything recursive
        (building, type-checking, printing expressions) walks it."""
        depth: dict[int, int] = {}
        order, stack = [], [tree]
        while stack:  # pre-order, iteratively
            t = stack.pop()
            order.append(t)
            stack.extend(c for c in reversed(t.children) if isinstance(c, Tree))
        for t in reversed(order):
            # an operator chain (a + b + c) becomes a nested expression, one level per operand
            operands = sum(1 for c in t.children if not (isinstance(c, Token) and c.type in _OPERATORS))
            chain = operands - 1 if t.data in _CHAINS else 0
            depth[id(t)] = 1 + chain + max((depth[id(c)] for c in t.children if isinstance(c, Tree)), default=0)
        too_deep = next((t for t in order if depth[id(t)] > MAX_DEPTH and t.data in _EXPRESSIONS), None)
        if too_deep is not None:
            raise self.error(too_deep, f"expression nested {depth[id(too_deep)]} levels deep (each operator and each "
                                       f"term of a chain such as a + b + c counts one); at most {MAX_DEPTH}")

    def loc(self, node: Tree | Token) -> SourceLoc:
        if isinstance(node, Token):
            return SourceLoc(self.filename, node.line, node.column)
        return SourceLoc(self.filename, node.meta.line, node.meta.column)

    def error(self, node: Tree | Token, msg: str) -> IsaError:
        return IsaError(msg, self.loc(node))

    def const_int(self, node: Tree, what: str) -> int:
        e = self.expr(node)
        free = e.free_vars()
        if free:
            raise self.error(node, f"{what} must be a constant expression; '{sorted(free)[0]}' is not a constant")
        if self.kind(e, node) != "int":
            raise self.error(node, f"{what} must be an integer, not a condition")
        value = E.evaluate(e, {})
        if abs(value).bit_length() > MAX_BITS:  # a chain of squares would grow without bound
            raise self.error(node, f"{what} has {abs(value).bit_length()} bits, more than {MAX_BITS}")
        return value  # type: ignore[return-value]

    def literal(self, tok: Token) -> int:
        """An integer literal of at most MAX_BITS bits (int() of thousands of digits is an error of its own)."""
        text = str(tok)
        if len(text) > 1 and text[0] == "0" and text[1] not in "xX":  # int('010', 0) is an error, as in Python
            msg = "leading zeros are not allowed in integer literals"
            if len(text) <= 64:  # say what to write; an octal reading, where it differs, may be what was meant
                decimal = text.lstrip("0") or "0"
                octal = int(text, 8) if set(text) <= set("01234567") else None
                msg += f": write {decimal}" + (f" (or {hex(octal)} if you meant octal)" if octal not in (None, int(decimal))
                                               else "") + f", not {text}"
            raise self.error(tok, msg)
        value = int(text, 0) if len(text) <= MAX_BITS // 3 + 3 else None
        if value is None or value.bit_length() > MAX_BITS:
            raise self.error(tok, f"integer literal of {len(text)} characters: more than {MAX_BITS} bits")
        return value

    def kind(self, e: E.Expr, node: Tree | Token) -> str:
        """``E.kind``, its errors located (at the offending part where it has a place)."""
        try:
            return E.kind(e)
        except E.ExprTypeError as err:
            raise IsaError(str(err), err.at.loc or self.loc(node)) from None

    def expr(self, node: Tree | Token) -> E.Expr:
        """Build an expression, substituting constants."""
        loc = self.loc(node)
        if isinstance(node, Token):  # a bare token can only come from rules inlined by '?'
            raise self.error(node, f"unexpected '{node}'")
        kind = node.data
        ch = node.children
        if kind == "int_":
            return E.Const(self.literal(ch[0]), loc=loc)
        if kind == "true_":
            return E.Const(True, loc=loc)
        if kind == "false_":
            return E.Const(False, loc=loc)
        if kind == "var":
            name = str(ch[0])
            if name in self.constants:
                return E.Const(self.constants[name], loc=loc)
            return E.Var(name, loc=loc)
        if kind == "neg":
            return E.UnOp("-", self.expr(ch[0]), loc=loc)
        if kind == "not_":
            return E.UnOp("not", self.expr(ch[0]), loc=loc)
        if kind == "call":
            fn = str(ch[0])
            if fn not in E.BUILTINS:
                raise self.error(ch[0], f"unknown function '{fn}' (available: {', '.join(E.BUILTINS)})")
            return E.Call(fn, tuple(self.expr(a) for a in ch[1:]), loc=loc)
        if kind == "power":
            base, exp = self.expr(ch[0]), self.expr(ch[1])
            if exp.free_vars() or base.free_vars():
                raise self.error(node, "'**' needs constant operands")
            if self.kind(base, node) != "int" or self.kind(exp, node) != "int":
                raise self.error(node, "'**' needs integer operands")
            b, x = E.evaluate(base, {}), E.evaluate(exp, {})
            if x < 0:
                raise self.error(node, f"'**' needs a non-negative exponent, got {x} (the result would not be an integer)")
            if abs(b) > 1 and x * math.log2(abs(b)) >= MAX_BITS:  # the result has floor(that) + 1 bits
                raise self.error(node, f"{b} ** {x} has more than {MAX_BITS} bits")
            return E.Const(b ** x, loc=loc)
        if kind in ("or_expr", "and_expr"):
            op = "or" if kind == "or_expr" else "and"
            out = self.expr(ch[0])
            for c in ch[1:]:
                out = E.BinOp(op, out, self.expr(c), loc=loc)
            return out
        if kind in ("sum", "product"):
            out = self.expr(ch[0])
            for op, c in zip(ch[1::2], ch[2::2]):
                out = E.BinOp(str(op), out, self.expr(c), loc=self.loc(op))
            return out
        if kind == "comparison":  # a <= b < c  ==  a <= b and b < c
            terms = [self.expr(c) for c in ch[0::2]]
            parts = [E.BinOp(str(op), a, b, loc=a.loc) for op, a, b in zip(ch[1::2], terms, terms[1:])]
            out = parts[0]
            for p in parts[1:]:
                out = E.BinOp("and", out, p, loc=loc)
            return out
        raise self.error(node, f"unexpected expression form '{kind}'")  # grammar and builder disagree

    def check_new_name(self, tok: Token, what: str) -> str:
        name = str(tok)
        taken = {**{b: "buffer" for b in self.buffers}, **({self.hbm.name: "buffer"} if self.hbm else {}),
                 **{c: "constant" for c in self.constants}, **{i: "instruction" for i in self.instructions}}
        if name in taken:
            kind = taken[name]
            raise self.error(tok, f"{what} '{name}' is already declared as {'an' if kind[0] in 'aeiou' else 'a'} {kind}")
        return name

    # -- items -------------------------------------------------------------------
    def _target(self, t: Tree, _inc: _Chain) -> None:
        if self.target is not None:
            raise self.error(t, f"target already declared as '{self.target}' at {self.target_loc}")
        self.target, self.target_loc = str(t.children[0]), self.loc(t)

    def _include(self, t: Tree, including: _Chain) -> None:
        rel = str(t.children[0])[1:-1]
        path = pathlib.Path(self.filename).parent / rel
        key = str(path.resolve())
        first = next((i for i, (k, _) in enumerate(including) if k == key), None)
        if first is not None:
            chain = [shown for _, shown in including[first:]] + [including[first][1]]
            raise self.error(t, f"include cycle: {' -> '.join(chain)}")
        if not path.exists():
            raise self.error(t, f"cannot include '{rel}': no such file {path}")
        if not path.is_file():
            raise self.error(t, f"cannot include '{rel}': {path} is not a regular file")
        self.load(read_source(path, IsaError), str(path), including + ((key, str(path)),))

    def _const_decl(self, t: Tree, _inc: _Chain) -> None:
        name = self.check_new_name(t.children[0], "constant")
        self.constants[name] = self.const_int(t.children[1], f"constant '{name}'")

    def _hbm(self, t: Tree, _inc: _Chain) -> None:
        if self.hbm is not None:
            raise self.error(t, f"hbm already declared as '{self.hbm.name}'")
        name = self.check_new_name(t.children[0], "buffer")
        size_node = t.children[1]
        size = self.literal(size_node.children[0]) * _UNITS[str(size_node.children[1]) if size_node.children[1] else None]
        if size <= 0:
            raise self.error(size_node, "hbm size must be positive")
        self.check_size(size_node, "hbm", size)
        self.hbm = Buffer(name, lookup_dtype("u8"), (size,), (), is_hbm=True, loc=self.loc(t))

    def _buffer(self, t: Tree, _inc: _Chain) -> None:
        name_tok, dt_tok, *rest = t.children
        name = self.check_new_name(name_tok, "buffer")
        access = rest[-1]
        unit_nodes = [c for c in rest[:-1] if c is not None]
        unit = tuple(self.const_int(c, "buffer unit dimension") for c in unit_nodes)
        acc = tuple(self.const_int(c, "buffer access dimension") for c in access.children)
        for node, v in zip(unit_nodes + list(access.children), unit + acc):
            if v <= 0:
                raise self.error(node, f"buffer dimension must be positive, got {v}")
        dt = lookup_dtype(str(dt_tok))
        size = math.prod(unit + acc) * dt.nbytes
        self.check_size(t, f"buffer '{name}'", size)
        self.buffers[name] = Buffer(name, dt, acc, unit, loc=self.loc(t))

    def _clock(self, t: Tree, _inc: _Chain) -> None:
        if self.clock_hz is not None:
            raise self.error(t, f"the clock is declared twice (first at {self.clock_loc})")
        self.clock_hz = self.positive(t.children[0], "the clock") * _FREQ[str(t.children[1])]
        self.clock_loc = self.loc(t)

    def _peak(self, t: Tree, _inc: _Chain) -> None:
        eng, dt, num = t.children
        p = Peak(str(eng), lookup_dtype(str(dt)).name, self.positive(num, "a peak"))
        first = next((loc for q, loc in self.peaks if (q.engine, q.dtype) == (p.engine, p.dtype)), None)
        if first is not None:
            raise self.error(t, f"a second peak for engine '{p.engine}' and {p.dtype} (first at {first})")
        self.peaks.append((p, self.loc(t)))

    def _bandwidth(self, t: Tree, _inc: _Chain) -> None:
        src, dst, num = t.children
        bw = Bandwidth(str(src), str(dst), self.positive(num, "a bandwidth"))
        first = next((loc for b, loc in self.bandwidths if (b.src, b.dst) == (bw.src, bw.dst)), None)
        if first is not None:
            raise self.error(t, f"a second bandwidth from {bw.src} to {bw.dst} (first at {first})")
        self.bandwidths.append((bw, self.loc(t)))

    def _native_prelude(self, t: Tree, _inc: _Chain) -> None:
        self.native_declaration(t, "\n".join(self.c_line(s) for s in t.children))

    def _native_flags(self, t: Tree, _inc: _Chain) -> None:
        self.native_declaration(t, self.c_line(t.children[0]))

    def _native_cpu(self, t: Tree, _inc: _Chain) -> None:
        flags = tuple(self.c_line(s) for s in t.children)
        for s, f in zip(t.children, flags):
            if not re.fullmatch(r"[a-z0-9_]+", f):
                raise self.error(s, f"a CPU feature is a /proc/cpuinfo flag such as \"avx2\", not {f!r}")
        self.native_declaration(t, flags)

    def native_declaration(self, t: Tree, value: object) -> None:
        first = self.native.get(t.data)
        if first is not None:
            raise self.error(t, f"{t.data} is declared twice (first at {first[1]})")
        self.native[t.data] = (value, self.loc(t))

    def c_line(self, tok: Token) -> str:
        """A string of a native declaration: one line of C, printable."""
        text = str(tok)[1:-1]
        bad = next((c for c in text if not c.isprintable()), None)
        if bad is not None:
            raise self.error(tok, f"unexpected character {bad!r} in a native string")
        return text

    def check_size(self, node: Tree, what: str, size: int) -> None:
        if size > MAX_BUFFER_BYTES:
            raise self.error(node, f"{what} of {shown_count(size)} bytes; a buffer holds at most "
                                   f"{MAX_BUFFER_BYTES >> 30} GiB (the simulator keeps every byte)")

    def positive(self, tok: Token, what: str) -> float:
        """A fact's number: finite and above zero (a zero clock or bandwidth divides by zero later)."""
        v = float(tok)
        if not (0 < v < math.inf):
            raise self.error(tok, f"{what} must be a positive number, got {tok}")
        return v

    def _instruction(self, t: Tree, _inc: _Chain) -> None:
        name_tok, comp_names, addr_names, *clauses = t.children
        name = self.check_new_name(name_tok, "instruction")
        attrs: dict[str, Attribute] = {}
        for kind, names in (("comp", comp_names), ("addr", addr_names)):
            for tok in names.children if names is not None else ():
                if str(tok) in attrs:
                    raise self.error(tok, f"attribute '{tok}' declared twice in '{name}'")
                if str(tok) in self.constants:
                    raise self.error(tok, f"attribute '{tok}' shadows the constant of the same name")
                attrs[str(tok)] = Attribute(str(tok), kind, loc=self.loc(tok))
        inputs: list[Slice] = []
        output: Slice | None = None
        constraints: list[E.Expr] = []
        engine: tuple[str, E.Expr] | None = None
        sem: Semantics | None = None
        native: str | None = None
        for c in clauses:
            if c.data == "in_slice":
                inputs.append(self.slice(c))
            elif c.data == "out_slice":
                if output is not None:
                    raise self.error(c, f"instruction '{name}' has a second output; an instruction writes exactly one slice")
                output = self.slice(c)
            elif c.data == "where":
                constraints.extend(self.expr(x) for x in c.children)
            elif c.data == "engine":
                if engine is not None:
                    raise self.error(c, f"instruction '{name}' has two engine clauses")
                engine = (str(c.children[0]), self.expr(c.children[1]))
            elif c.data == "semantics":
                if sem is not None:
                    raise self.error(c, f"instruction '{name}' has two semantics blocks")
                tok = c.children[0]
                body = _strip_comments(str(tok)[1:-1])
                col = tok.column + 1
                sem = Semantics(body, SourceLoc(self.filename, tok.line, col))
            elif c.data == "native":
                if native is not None:
                    raise self.error(c, f"instruction '{name}' has two native clauses")
                native = "\n".join(self.c_line(s) for s in c.children)
                for m in _PLACEHOLDER.finditer(native):
                    if m.group(1) not in attrs:
                        raise self.error(c, f"'{{{m.group(1)}}}' in the native text of '{name}' is none of its "
                                            f"attributes ({', '.join(attrs) or 'none'})")
        where = self.loc(name_tok)
        if output is None:
            raise IsaError(f"instruction '{name}' has no 'out' slice", where)
        if sem is None:
            raise IsaError(f"instruction '{name}' has no semantics block", where)
        if engine is None:
            raise IsaError(f"instruction '{name}' has no 'engine NAME latency EXPR' clause", where)
        self.instructions[name] = Instruction(
            name=name,
            comp_attrs=tuple(a for a in attrs.values() if a.kind == "comp"),
            addr_attrs=tuple(a for a in attrs.values() if a.kind == "addr"),
            inputs=tuple(inputs), output=output, constraints=tuple(constraints),
            engine=engine[0], latency=engine[1], semantics=sem, native=native, loc=where,
        )

    def slice(self, c: Tree) -> Slice:
        var_tok, sl = c.children
        buf_tok, *ranges = sl.children
        return Slice(
            var=str(var_tok), buffer=str(buf_tok),
            starts=tuple(self.expr(r.children[0]) for r in ranges),
            lengths=tuple(self.expr(r.children[1]) for r in ranges),
            loc=self.loc(c),
        )


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")  # an attribute's value in a native text


def _strip_comments(text: str) -> str:
    """Blank out '#' comments and ';' terminators (Act writes `parameter(0);`), keeping every
    other character in place so HLO error columns stay right. A '#' or ';' inside a string or
    a '//' or '/* */' comment (which the HLO front end reads itself) stays."""
    return _HLO_TEXT.sub(lambda m: " " * len(m.group()) if m.group()[0] in "#;" else m.group(), text)
