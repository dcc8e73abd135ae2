"""The assembly format: self-describing, runnable program text.

    .target qkv                                 # optional; checked against the simulator's target
    .input  arg0 bf16[64,64] @0                 # tensor type (XLA layout optional), HBM byte offset
    .output out0 bf16[64,64]{1,0} @24576
    .const  @32768 0011aabb...                  # hex bytes, or a .npy path (relative to the program)
    load_rm n=64 addr_in=0 addr_out=0           # one instruction per line: name key=value ...

'#' starts a comment. Errors are ``file:line:col: message``.
"""
from __future__ import annotations

import pathlib
import re
from dataclasses import dataclass, field

import numpy as np

from ..errors import ActgenError, SourceLoc
from ..ir.types import TensorType


class ProgramError(ActgenError):
    pass


@dataclass(frozen=True)
class TensorDecl:
    name: str
    type: TensorType
    offset: int
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ConstData:
    offset: int
    data: bytes
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ConcreteInstr:
    name: str
    attrs: dict[str, int]
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass
class Program:
    target: str | None = None
    inputs: list[TensorDecl] = field(default_factory=list)
    outputs: list[TensorDecl] = field(default_factory=list)
    consts: list[ConstData] = field(default_factory=list)
    instructions: list[ConcreteInstr] = field(default_factory=list)


_TOKEN = re.compile(r"\S+")


def parse_program(text: str, filename: str = "<string>") -> Program:
    prog = Program()
    base = pathlib.Path(filename).parent
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0]
        toks = [(m.group(), m.start() + 1) for m in _TOKEN.finditer(line)]
        if not toks:
            continue
        at = lambda col: SourceLoc(filename, lineno, col)  # noqa: E731
        head, col = toks[0]
        if head.startswith("."):
            _directive(prog, head, toks, at, base)
        else:
            prog.instructions.append(_instruction(head, toks[1:], at(col), at))
    return prog


def _directive(prog: Program, head: str, toks, at, base: pathlib.Path) -> None:
    args = toks[1:]
    if head == ".target":
        if len(args) != 1:
            raise ProgramError("'.target' takes one name", at(toks[0][1]))
        prog.target = args[0][0]
    elif head in (".input", ".output"):
        if len(args) != 3:
            raise ProgramError(f"'{head}' takes: NAME TYPE @OFFSET", at(toks[0][1]))
        (name, _), (ty, tcol), (off, ocol) = args
        decl = TensorDecl(name, _tensor_type(ty, at(tcol)), _offset(off, at(ocol)), at(toks[0][1]))
        (prog.inputs if head == ".input" else prog.outputs).append(decl)
    elif head == ".const":
        if len(args) != 2:
            raise ProgramError("'.const' takes: @OFFSET HEXBYTES|FILE.npy", at(toks[0][1]))
        (off, ocol), (data, dcol) = args
        prog.consts.append(ConstData(_offset(off, at(ocol)), _const_bytes(data, at(dcol), base), at(toks[0][1])))
    else:
        raise ProgramError(f"unknown directive '{head}' (expected .target, .input, .output or .const)",
                           at(toks[0][1]))


def _instruction(name: str, args, loc: SourceLoc, at) -> ConcreteInstr:
    attrs: dict[str, int] = {}
    for tok, col in args:
        key, eq, val = tok.partition("=")
        if not eq or not key:
            raise ProgramError(f"expected key=value, got '{tok}'", at(col))
        if key in attrs:
            raise ProgramError(f"attribute '{key}' given twice", at(col))
        try:
            attrs[key] = int(val, 0)
        except ValueError:
            raise ProgramError(f"attribute '{key}' needs an integer value, got '{val}'", at(col + len(key) + 1)) from None
    return ConcreteInstr(name, attrs, loc)


def _tensor_type(text: str, loc: SourceLoc) -> TensorType:
    from ..hlo import parse_type

    try:
        t = parse_type(text)
    except ActgenError as err:
        raise ProgramError(f"bad tensor type '{text}': {err.message}", loc) from None
    if not isinstance(t, TensorType):
        raise ProgramError(f"'{text}' is not a tensor type", loc)
    return t


def _offset(text: str, loc: SourceLoc) -> int:
    if not text.startswith("@"):
        raise ProgramError(f"expected an HBM offset like @1024, got '{text}'", loc)
    try:
        v = int(text[1:], 0)
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
    lines += [" ".join([i.name] + [f"{k}={v}" for k, v in i.attrs.items()]) for i in prog.instructions]
    return "\n".join(lines) + "\n"
