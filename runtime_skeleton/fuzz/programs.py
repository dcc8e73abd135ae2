"""Random valid programs and the kernels they compute (issue 37, Deliver 6).

A random program is a straight-line sequence of a target's instructions: each picks
its computation attributes α at random (mostly an end of their ranges, so tiles
meet), reads values earlier instructions left on chip (mostly recent ones), kernel
inputs in HBM, or HBM bytes it does not read (``isel.unread``: a store's kept bytes), and writes
one value. What no result (an HBM value nothing reads again) depends on is dropped.
As a pii graph it is allocated by phase 2 in the order drawn and emitted, so its
addresses satisfy the description's constraints; a draw whose graph has no
allocation, or fewer than three instructions left, is drawn again. Its meaning, the
semantics substituted (``isel.substitute``), is an HLO kernel over the program's
inputs (the bytes it reads, as ``u8`` tensors) whose results are the bytes its
stores write. The backend must compile that kernel, and its program should cost no
more cycles than the random one: everything the random program does is something
the backend's search could have found.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

from ..alloc.allocate import AllocationFailed, SolveOptions, allocate
from ..emit import emit_program
from ..hlo.printer import print_module
from ..ir.graph import Module
from ..ir.types import TensorType
from ..isel.extract import PiiGraph, PiiNode
from ..isel.substitute import pii_graph_to_module
from ..isel.terms import UNDEF
from ..isel.unread import unread_parameters
from ..reference import evaluate
from ..reference.npz_io import random_inputs
from ..program import Program
from ..target import InstructionDef, TargetDef

MIN_INSTRUCTIONS, MAX_INSTRUCTIONS = 3, 30
TRIES = 64  # draws of (instruction, α) per step before the program ends where it is
REDRAWS = 16  # whole programs drawn again when one has no allocation or no output


@dataclass
class RandomProgram:
    seed: int
    graph: PiiGraph
    program: Program
    kernel: Module  # its meaning
    input_types: list[TensorType]
    output_types: list[TensorType]

    @property
    def hlo(self) -> str:
        return print_module(self.kernel)


@dataclass(frozen=True)
class _Shape:
    """What an instruction reads and writes under one α."""
    ins: type[InstructionDef]
    alpha: dict
    operands: tuple[tuple[str, TensorType, bool], ...]  # (buffer, type, whether the result depends on it)
    output: tuple[str, TensorType]


def _layout(t: TensorType) -> TensorType:
    return t.with_layout(t.effective_layout)


def _draw_alpha(rng: random.Random, ins: type[InstructionDef]) -> dict:
    """Mostly an end of each attribute's range (a whole tile, a dense stride: tiles
    meet), else any value in it."""
    return {d.name: rng.choice((d.lo, d.hi, d.lo, d.hi, rng.randint(d.lo, d.hi))) for d in ins.comp_attrs}


def _recent(rng: random.Random, values: list[int]) -> int:
    """One of ``values``, most likely one of the last few (so chains form, as in real code)."""
    return values[-1 - min(int(rng.expovariate(0.7)), len(values) - 1)]


def _shape(target: TargetDef, ins: type[InstructionDef], alpha: dict, cache: dict) -> _Shape | None:
    key = (ins.name, tuple(sorted(alpha.items())))
    if key not in cache:
        cache[key] = _compute_shape(target, ins, alpha)
    return cache[key]


def _compute_shape(target: TargetDef, ins: type[InstructionDef], alpha: dict) -> _Shape | None:
    from ..errors import ActgenError

    try:
        sem = target.semantics(ins, alpha)
    except (ActgenError, ValueError, ZeroDivisionError):
        return None  # an α whose shapes are empty or negative
    params = sem.parameter_types
    if any(not isinstance(t, TensorType) or 0 in t.shape for t in params) or 0 in sem.result_type.shape:
        return None
    unread = unread_parameters(target, ins, alpha)
    ops = tuple((s.buffer, _layout(t), j not in unread) for j, (s, t) in enumerate(zip(ins.inputs, params)))
    return _Shape(ins, alpha, ops, (ins.output.buffer, _layout(sem.result_type)))


class _Builder:
    def __init__(self, target: TargetDef, rng: random.Random) -> None:
        self.target, self.rng = target, rng
        self.nodes: list[PiiNode] = []
        self.input_types: list[TensorType] = []
        self.pool: dict[tuple[str, TensorType], list[int]] = {}  # values an instruction may read
        self.cache: dict = {}
        self.hbm = target.hbm.name

    def _add(self, node: PiiNode) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def _operand(self, buf: str, t: TensorType, used: bool) -> int | None:
        if not used and buf == self.hbm:
            return self._add(PiiNode("undef", UNDEF, buf, t, {}, (), -1))
        have = self.pool.get((buf, t), [])
        if buf == self.hbm and (not have or self.rng.random() < 0.5):
            self.input_types.append(t)
            return self._add(PiiNode("input", "input", buf, t, {"index": len(self.input_types) - 1}, (), -1))
        return _recent(self.rng, have) if have else None

    def step(self) -> bool:
        """One instruction whose operands are there; False when none was found."""
        names = sorted(self.target.instructions)
        for _ in range(TRIES):
            ins = self.target.instructions[self.rng.choice(names)]
            sh = _shape(self.target, ins, _draw_alpha(self.rng, ins), self.cache)
            if sh is None or not self._ready(sh):
                continue
            args = [self._operand(buf, t, used) for buf, t, used in sh.operands]
            if any(a is None for a in args):
                continue
            buf, t = sh.output
            self._make_room(buf, t)
            v = self._add(PiiNode("pii", ins.name, buf, t, dict(sh.alpha), tuple(args), -1))
            if ins.alias is not None:  # overwritten in place: the old value is gone
                old = args[ins.alias]
                self.pool[(self.nodes[old].buffer, self.nodes[old].type)] = [
                    x for x in self.pool.get((self.nodes[old].buffer, self.nodes[old].type), []) if x != old]
            self.pool.setdefault((buf, t), []).append(v)
            return True
        return False

    def _ready(self, sh: _Shape) -> bool:
        if sh.ins.alias is not None:  # written in place: over bytes it reads from chip or does not read
            buf, _, used = sh.operands[sh.ins.alias]
            if used and buf == self.hbm:
                return False
        return all(buf == self.hbm or self.pool.get((buf, t)) for buf, t, used in sh.operands)

    def _make_room(self, buf: str, t: TensorType) -> None:
        """Values of ``buf`` that may still be read, and the new one, fit in it: the oldest
        are read no more (the new value overwrites them, as a preload replaces the last)."""
        b = self.target.buffers[buf]
        if b.is_hbm:
            return
        room = math.prod(b.access_shape)

        def size(tt: TensorType) -> int:
            return math.prod(tt.shape[:len(b.access_shape)])

        live = [(key, v) for key, vs in self.pool.items() if key[0] == buf for v in vs]
        live.sort(key=lambda kv: kv[1])
        while live and sum(size(self.nodes[v].type) for _, v in live) + size(t) > room:
            key, v = live.pop(0)
            self.pool[key].remove(v)

    def graph(self) -> tuple[PiiGraph, list[TensorType]] | None:
        """The program without what its results do not depend on (outputs: the HBM results
        nothing reads again), and its inputs' types; None when it writes no result."""
        users = {a for n in self.nodes for a in n.args}
        outs = [v for v, n in enumerate(self.nodes) if n.is_instruction and n.buffer == self.hbm and v not in users]
        live, stack = set(), list(outs)
        while stack:
            v = stack.pop()
            if v not in live:
                live.add(v)
                stack += self.nodes[v].args
        if not outs:
            return None
        keep = sorted(live)
        new = {v: k for k, v in enumerate(keep)}
        inputs = [v for v in keep if self.nodes[v].kind == "input"]
        index = {v: k for k, v in enumerate(inputs)}
        nodes = []
        for v in keep:
            n = self.nodes[v]
            attrs = {"index": index[v]} if n.kind == "input" else n.attrs
            nodes.append(PiiNode(n.kind, n.op, n.buffer, n.type, dict(attrs), tuple(new[a] for a in n.args), -1))
        return PiiGraph(nodes, [new[o] for o in outs]), [self.nodes[v].type for v in inputs]


def random_program(target: TargetDef, seed: int, size: int | None = None) -> RandomProgram | None:
    """The random program of ``seed`` (3-30 instructions, or ``size``), allocated and
    emitted, with its meaning; None when REDRAWS draws found none that allocates."""
    rng = random.Random(seed)
    for _ in range(REDRAWS):
        b = _Builder(target, rng)
        want = size or rng.randint(MIN_INSTRUCTIONS, MAX_INSTRUCTIONS)
        while sum(n.is_instruction for n in b.nodes) < want and b.step():
            pass
        built = b.graph()
        if built is None or built[0].num_instructions < MIN_INSTRUCTIONS:
            continue
        g, input_types = built
        order = [v for v, n in enumerate(g.nodes) if n.is_instruction]  # as drawn
        try:
            alloc = allocate(target, g, order, SolveOptions(timeout=5.0), explain=False)
        except AllocationFailed:
            continue
        outs = [_layout(g.nodes[o].type) for o in g.outputs]
        prog = emit_program(target.name, g, alloc, input_types, outs)
        kernel = pii_graph_to_module(g, target, input_types, outs)
        return RandomProgram(seed, g, prog, kernel, input_types, outs)
    return None


def self_check(target: TargetDef, rp: RandomProgram, seed: int = 11) -> str:
    """'' when the random program, run on the simulator, computes its meaning; else the
    difference (the simulator and the semantics disagree, or this module has a bug)."""
    from ..reference.compare import compare_outputs
    from ..sim import run_program

    x = random_inputs(rp.input_types, seed)
    return "\n".join(compare_outputs(run_program(target, rp.program, x), evaluate(rp.kernel, x)))
