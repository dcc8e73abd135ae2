"""The assembly format: self-describing, runnable program text.

    .target qkv                                 # optional; checked against the simulator's target
    .input  arg0 bf16[64,64] @0                 # tensor type (XLA layout optional), HBM byte offset
    .output out0 bf16[64,64]{1,0} @24576
    .const  @32768 0011aabb...                  # hex bytes, or a .npy path (relative to the program)
    load_rm n=64 addr_in=0 addr_out=0           # one instruction per line: name key=value ...
    .loop i 0 4                                 # a counted loop, i = 0, 1, 2, 3 (loops nest)
      load_rm n=16 addr_in=2048*i addr_out=0    # attributes are affine in the enclosing loop variables
    .endloop

'#' starts a comment. Errors are ``file:line:col: message``. A program with loops
runs as its unrolled instruction stream (``Program.flat``).
"""
from __future__ import annotations

import pathlib
import re

import numpy as np

from ..errors import MAX_BUFFER_BYTES, ActgenError, SourceLoc, shown_count
from ..ir.types import TensorType
from ..layout import byte_size
from .model import Affine, Attr, ConcreteInstr, ConstData, Item, Loop, Program, ProgramError, TensorDecl

_TOKEN = re.compile(r"\S+")


def parse_program(text: str, filename: str = "<string>") -> Program:
    prog = Program()
    base = pathlib.Path(filename).parent
    open_loops: list[tuple[tuple[str, int, int, SourceLoc], list[Item]]] = []
    body: list[Item] = prog.instructions
    # lines end at '\n' only: splitlines() also breaks at form feeds, U+0085 and U+2028, which
    # would turn the rest of a comment into a line of the program
    for lineno, raw in enumerate(text.split("\n"), start=1):
        line = raw.split("#", 1)[0]
        bad = next((c for c, ch in enumerate(line, start=1) if not ch.isprintable() and ch not in "\t\r"), None)
        if bad is not None:
            raise ProgramError(f"unexpected character {line[bad - 1]!r}", SourceLoc(filename, lineno, bad))
        toks = [(m.group(), m.start() + 1) for m in _TOKEN.finditer(line)]
        if not toks:
            continue
        at = lambda col: SourceLoc(filename, lineno, col)  # noqa: E731
        head, col = toks[0]
        if head == ".loop":
            header = _loop_header(toks, at, [h[0] for h, _ in open_loops])
            open_loops.append((header, body))
            body = []
        elif head == ".endloop":
            if len(toks) != 1:
                raise ProgramError("'.endloop' takes no arguments", at(toks[1][1]))
            if not open_loops:
                raise ProgramError("'.endloop' without a '.loop'", at(col))
            (var, start, stop, loc), outer = open_loops.pop()
            outer.append(Loop(var, start, stop, tuple(body), loc))
            _check_executed(outer[-1:], loc)
            body = outer
        elif head.startswith("."):
            if open_loops:
                raise ProgramError(f"'{head}' inside a loop (directives come before or after loops)", at(col))
            _directive(prog, head, toks, at, base)
        else:
            body.append(_instruction(head, toks[1:], at(col), at, {h[0] for h, _ in open_loops}))
    if open_loops:
        (_, _, _, loc), _ = open_loops[-1]
        raise ProgramError("'.loop' without its '.endloop'", loc)
    _check_executed(prog.instructions, SourceLoc(filename, 1, 1))
    return prog


MAX_EXECUTED = 1 << 23  # the most steps (instructions and loop trips) a program may run (docs/limits.md):
# 2.7 times the largest program of the benches (AMX f32 GEMM 256³, 3.1M instructions); 2^26 empty trips ran 15 s


def _steps(items) -> int:
    """Instructions executed plus loop iterations (an empty loop of 10^9 trips also takes time)."""
    return sum(it.trips * (1 + _steps(it.body)) if isinstance(it, Loop) else 1 for it in items)


def _check_executed(items: list[Item], loc: SourceLoc) -> None:
    n = _steps(items)
    if n > MAX_EXECUTED:
        what = "this loop runs" if len(items) == 1 and isinstance(items[0], Loop) else "the program runs"
        raise ProgramError(f"{what} {shown_count(n)} steps (instructions and loop trips); the simulator runs at most "
                           f"{MAX_EXECUTED}", loc)


_NAME = re.compile(r"[A-Za-z_]\w*$")


def _loop_header(toks, at, enclosing: list[str]) -> tuple[str, int, int, SourceLoc]:
    if len(toks) != 4:
        raise ProgramError("'.loop' takes: VAR START STOP", at(toks[0][1]))
    (var, vcol), (lo, lcol), (hi, hcol) = toks[1:]
    if not _NAME.match(var):
        raise ProgramError(f"bad loop variable '{var}'", at(vcol))
    if var in enclosing:
        raise ProgramError(f"loop variable '{var}' is already the variable of an enclosing loop", at(vcol))
    bounds = []
    for text, col in ((lo, lcol), (hi, hcol)):
        try:
            bounds.append(_integer(text))
        except ValueError:
            raise ProgramError(f"loop bound must be an integer, got '{text}'", at(col)) from None
    return var, bounds[0], bounds[1], at(toks[0][1])


def _directive(prog: Program, head: str, toks, at, base: pathlib.Path) -> None:
    args = toks[1:]
    if head == ".target":
        if len(args) != 1:
            raise ProgramError("'.target' takes one name", at(toks[0][1]))
        prog.target, prog.target_loc = args[0][0], at(args[0][1])
    elif head in (".input", ".output"):
        if len(args) != 3:
            raise ProgramError(f"'{head}' takes: NAME TYPE @OFFSET", at(toks[0][1]))
        (name, ncol), (ty, tcol), (off, ocol) = args
        if any(d.name == name for d in prog.inputs + prog.outputs):
            raise ProgramError(f"'{name}' is declared twice (each .input and .output needs a name of its own)",
                               at(ncol))
        decl = TensorDecl(name, _tensor_type(ty, at(tcol)), _offset(off, at(ocol)), at(toks[0][1]))
        _check_size(decl, at(tcol))
        if head == ".input":
            _apart_from_inputs(prog, f"input '{name}'", decl.offset, byte_size(decl.type), at(ocol))
        (prog.inputs if head == ".input" else prog.outputs).append(decl)
    elif head == ".const":
        if len(args) != 2:
            raise ProgramError("'.const' takes: @OFFSET HEXBYTES|FILE.npy", at(toks[0][1]))
        (off, ocol), (data, dcol) = args
        const = ConstData(_offset(off, at(ocol)), _const_bytes(data, at(dcol), base), at(toks[0][1]))
        _apart_from_inputs(prog, "constant", const.offset, len(const.data), at(ocol), consts=False)
        prog.consts.append(const)
    else:
        raise ProgramError(f"unknown directive '{head}' (expected .target, .input, .output or .const)",
                           at(toks[0][1]))


def _check_size(decl: TensorDecl, loc: SourceLoc) -> None:
    """No HBM holds more than MAX_BUFFER_BYTES (the description's limit): a larger tensor is
    refused as such, not as an overlap with the next declaration."""
    if byte_size(decl.type) > MAX_BUFFER_BYTES:
        raise ProgramError(f"'{decl.name}' ({decl.type}) takes {byte_size(decl.type):.3g} bytes, more than any "
                           f"target's HBM holds ({MAX_BUFFER_BYTES >> 30} GiB at most)", loc)


def _apart_from_inputs(prog: Program, what: str, lo: int, size: int, loc: SourceLoc, consts: bool = True) -> None:
    """``what`` (an input or a constant) in bytes of an input declared before, or (``consts``)
    of a constant: each would overwrite the other's bytes when loaded."""
    hi = lo + size
    regions = [(f"input '{d.name}'", d.offset, d.offset + byte_size(d.type)) for d in prog.inputs]
    regions += [("a constant", c.offset, c.offset + len(c.data)) for c in prog.consts] if consts else []
    for name, a, b in regions:
        if a < hi and lo < b:
            raise ProgramError(f"{what} at bytes [{lo}, {hi}) overlaps {name} at [{a}, {b})", loc)


def _instruction(name: str, args, loc: SourceLoc, at, loop_vars: set[str]) -> ConcreteInstr:
    attrs: dict[str, Attr] = {}
    for tok, col in args:
        key, eq, val = tok.partition("=")
        if not eq or not key:
            raise ProgramError(f"expected key=value, got '{tok}'", at(col))
        if key in attrs:
            raise ProgramError(f"attribute '{key}' given twice", at(col))
        attrs[key] = _attr_value(key, val, loop_vars, at(col + len(key) + 1))
    return ConcreteInstr(name, attrs, loc)


_TERM = re.compile(r"([+-]?)(?:(\w+)\*([A-Za-z_]\w*)|([A-Za-z_]\w*)|(\w+))", re.ASCII)  # no other digits


def _attr_value(key: str, text: str, loop_vars: set[str], loc: SourceLoc) -> Attr:
    """An integer, or an affine expression in enclosing loop variables: 16+64*i-j."""
    const, terms, pos = 0, {}, 0
    while pos < len(text):
        m = _TERM.match(text, pos)
        if m is None or (pos > 0 and not m.group(1)):
            raise ProgramError(f"attribute '{key}' needs an integer or an affine expression in loop variables, "
                               f"got '{text}'", loc)
        sign = -1 if m.group(1) == "-" else 1
        coef_text, var = (m.group(2), m.group(3)) if m.group(3) else ("1", m.group(4))
        try:
            if var is None:
                const += sign * int(m.group(5), 0)
            else:
                if not loop_vars:
                    raise ValueError(var)
                if var not in loop_vars:
                    raise ProgramError(f"attribute '{key}': '{var}' is not the variable of an enclosing loop", loc)
                terms[var] = terms.get(var, 0) + sign * int(coef_text, 0)
        except ValueError:
            raise ProgramError(f"attribute '{key}' needs an integer value, got '{text}'", loc) from None
        pos = m.end()
    if not text:
        raise ProgramError(f"attribute '{key}' needs an integer value, got ''", loc)
    return Affine.of(const, terms)


def _tensor_type(text: str, loc: SourceLoc) -> TensorType:
    from ..hlo import parse_type

    try:
        t = parse_type(text)
    except ActgenError as err:
        raise ProgramError(f"bad tensor type '{text}': {err.message}", loc) from None
    if not isinstance(t, TensorType):
        raise ProgramError(f"'{text}' is not a tensor type", loc)
    return t


def _integer(text: str) -> int:
    """A decimal or 0x integer in ASCII digits (int() also takes other scripts' digits); ValueError if not."""
    if not text.isascii():
        raise ValueError(text)
    return int(text, 0)


def _offset(text: str, loc: SourceLoc) -> int:
    if not text.startswith("@"):
        raise ProgramError(f"expected an HBM offset like @1024, got '{text}'", loc)
    try:
        v = _integer(text[1:])
    except ValueError:
        raise ProgramError(f"bad HBM offset '{text}'", loc) from None
    if v < 0:
        raise ProgramError(f"negative HBM offset '{text}'", loc)
    return v


def _const_bytes(text: str, loc: SourceLoc, base: pathlib.Path) -> bytes:
    if text.endswith(".npy"):
        path = base / text
        try:
            arr = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as err:
            raise ProgramError(f"cannot read constant file '{path}': {err}", loc) from None
        return np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise ProgramError("constant data must be hex bytes or a .npy path", loc) from None


def print_program(prog: Program) -> str:
    lines = []
    if prog.target:
        lines.append(f".target {prog.target}")
    for kind, decls in ((".input ", prog.inputs), (".output", prog.outputs)):
        lines += [f"{kind} {d.name} {d.type} @{d.offset}" for d in decls]
    lines += [f".const  @{c.offset} {c.data.hex()}" for c in prog.consts]
    _print_items(prog.instructions, "", lines)
    return "\n".join(lines) + "\n"


def _print_items(items, indent: str, lines: list[str]) -> None:
    for it in items:
        if isinstance(it, Loop):
            lines.append(f"{indent}.loop {it.var} {it.start} {it.stop}")
            _print_items(it.body, indent + "  ", lines)
            lines.append(f"{indent}.endloop")
        else:
            lines.append(indent + instr_text(it))


def instr_text(ci: ConcreteInstr) -> str:
    """The instruction as the assembly prints it."""
    return " ".join([ci.name] + [f"{k}={v}" for k, v in ci.attrs.items()])
