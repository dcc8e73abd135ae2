"""What phase 2 decides (``Allocation``), its options and failure, and the facts about a pii
graph's storage that every allocator and the checker read: extents, the kernel's HBM
regions, scratch."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ActgenError
from ..isel.extract import PiiGraph
from ..target import TargetDef
from .liveness import LiveRange, is_identity

ALIGN = 64  # bytes; where the HBM regions start (packed or hinted) and the constant section packs
OUTPUTS_APART = ("CSP3", "outputs apart from the inputs and constants")  # the group of a piece's outputs apart


class AllocationFailed(ActgenError):
    def __init__(self, message: str, core: Sequence[tuple[str, str]] = (), phi: frozenset | None = None,
                 prefix: tuple[int, ...] | None = None, live: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.core = list(core)  # (family, what) groups that conflict
        self.phi = phi  # the order's interference graph, when the order is to blame
        self.prefix = prefix  # the first instructions of the order, when every order beginning so fails too
        self.live = live  # the values live together where a buffer overflowed (CSP4)

    @property
    def order_independent(self) -> bool:
        return self.phi is None


@dataclass
class SolveOptions:
    timeout: float = 10.0  # work-seconds per CP-SAT call (its deterministic time; one worker, a fixed seed)
    max_orders: int = 64  # topological orders tried per pii graph
    budget: float = 10.0  # work-seconds of phase 2 per pii graph (then the next pii graph is tried)
    first_fit: bool = True  # try the constructive allocator (construct.py) before CP-SAT


@dataclass
class Allocation:
    order: list[int]  # instruction nodes in issue order
    starts: dict[int, tuple[int, ...]]  # node -> start per access dimension
    attrs: dict[int, dict[str, int]]  # instruction node -> α and β, in declaration order
    inputs: list[int]  # HBM offset per kernel input (-1: no region)
    outputs: list[int]  # HBM offset per kernel output
    consts: dict[int, int]  # const node -> HBM offset
    seconds: float = 0.0
    orders_tried: int = 1
    solver: str = "cp-sat"  # which allocator found it: "cp-sat" or "first-fit"


def aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def extent(g: PiiGraph, target: TargetDef, v: int) -> tuple[int, ...]:
    """The lengths node v occupies per access dimension of its buffer (bytes in HBM)."""
    n = g.nodes[v]
    buf = target.buffers[n.buffer]
    if buf.is_hbm:
        return (math.prod(n.type.shape) * n.type.dtype.nbytes,)
    return tuple(n.type.shape[:len(buf.access_shape)])


def num_inputs(g: PiiGraph) -> int:
    return 1 + max((n.attrs["index"] for n in g.nodes if n.kind == "input"), default=-1)


def input_node(g: PiiGraph, i: int) -> int:
    """A node whose start is kernel input i's region: the input itself, or, for an input
    the program does not read, the output that takes its storage over."""
    v = next((v for v, n in enumerate(g.nodes) if n.kind == "input" and n.attrs["index"] == i), None)
    return v if v is not None else next(g.outputs[k] for k, j in g.alias.items() if j == i)


def region_inputs(g: PiiGraph, target: TargetDef) -> list[int]:
    """The kernel inputs that have an HBM region: read in HBM, or taken over by an output."""
    read = {n.attrs["index"] for n in g.nodes if n.kind == "input" and n.buffer == target.hbm.name}
    return sorted(read | set(g.alias.values()))


def const_nodes(g: PiiGraph) -> list[int]:
    return [v for v, n in enumerate(g.nodes) if n.kind == "const"]


def const_offsets(g: PiiGraph, target: TargetDef) -> dict[int, int]:
    """Each constant's offset in the contiguous constant section, in node order."""
    out, off = {}, 0
    for v in const_nodes(g):
        out[v] = off
        off += aligned(extent(g, target, v)[0])
    return out


def const_section_size(g: PiiGraph, target: TargetDef) -> int:
    return sum(aligned(extent(g, target, v)[0]) for v in const_nodes(g))


def parts_of_outputs(g: PiiGraph, target: TargetDef) -> set[int]:
    """The outputs and what identity instructions make them of, and the operands that
    those instructions overwrite in place (which lie where their results do: a matrix
    stored column tile by column tile is each tile's store over the stores before it)."""
    out, stack = set(), list(g.outputs)
    while stack:
        v = stack.pop()
        if v not in out:
            out.add(v)
            n = g.nodes[v]
            if is_identity(n):
                stack += n.args
            elif n.is_instruction and (a := target.instructions[n.op].alias) is not None:
                stack.append(n.args[a])
    return out


def joined(g: PiiGraph, target: TargetDef) -> list[int]:
    """In a program run beside others (``Module.output_written``: its scratch moves, and
    each access must lie in one tensor or in scratch, superopt.addressing.region_of),
    the HBM concatenations that are no part of an output. Each lies within one input (a
    view of it) or apart from every input: one that joins an input's last row, in place,
    to rows stored after it is read across the input's edge. Empty for a whole kernel."""
    if not g.output_written:
        return []
    hbm, parts = target.hbm.name, parts_of_outputs(g, target)
    return [v for v, n in enumerate(g.nodes) if n.kind == "pii" and n.op == "concat^H" and n.buffer == hbm
            and v not in parts]


def scratch(g: PiiGraph, target: TargetDef, ranges: dict[int, LiveRange]) -> list[int]:
    """HBM instruction results that are no part of an output: values stored to be loaded
    again, which lie apart from the kernel's input and output regions."""
    hbm, parts = target.hbm.name, parts_of_outputs(g, target)
    return [v for v in ranges if g.nodes[v].is_instruction and g.nodes[v].buffer == hbm and v not in parts]
