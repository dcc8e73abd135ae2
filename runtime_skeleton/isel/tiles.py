"""Tiling splits to the instructions' own sizes (a schedule for Act §5.2.3's tiling).

The halving splits (axioms, "3. tiling splits") cut a dimension at a power of two,
one cut per rewrite, and every piece is split again. They reach every tile, but on a
whole kernel most pieces are sizes no instruction computes: AMX's vector
instructions take rows of 16 floats, yet an f32[16, 32] elementwise chain became
f32[8, 32], f32[4, 8], f32[2, 2], ... pieces, each rewritten further, and the
e-graph passed 200k e-nodes before any pii graph came.

``instruction-tiling`` cuts an operator in one rewrite into pieces of the size one
instruction's semantics computes it at: for each node of an instruction pattern with
the same operator and dtype, its extents at the largest α (aligned from the
innermost dimension, unit dimensions skipped on both sides; a dimension the pattern
lacks counts as 1). An f32[16, 32] add becomes a concatenation of 32 f32[1, 16] adds
for vaddps (and, when it adds to a dot's result, also of two f32[16, 16] adds for
tdpbf16ps' accumulation). The result is the same as a sequence of halving splits
would give (a concatenation of the operator over slices of its operands), so it is
exact where those are, and the halving splits still run: this rule only
reaches the instruction sizes first. A dot is cut along its batch and free dimensions
the same way, and for integer results also along its contraction (a wrapping sum of
the pieces; float sums are left to the halving splits, but for a dot that no
instruction's dot takes: outer products summed one contracted element at a time,
``_outer_products``, AMX's f32 matmuls as vfmadd231ps chains, its s32 ones as vpmulld). Copies are not cut here:
copy-intro puts one on every value, and the row copies of each cost more e-nodes than
they save (AMX transpose_4d no longer mapped at the default limits).

A convert a dot takes as an operand is not cut either: its pieces come from the dot's
cuts (slices pushed through it). Cut to vpmovsxbd's rows besides tdpbusd's [64, 16],
AMX K1's VNNI weights gave 128 rows, each with ~5 views: K1 mapped at 31k e-nodes in
5 s, K5 (K1 and an f32 chain) not at all; without them 523 e-nodes in 0.5 s, and K5
maps in 12 s.

An operator some instruction computes whole (each extent within one instruction's) is
not cut: tdpbusd converts a whole u8[16, 64] tile to s32, and cutting that into
vpmovzxbd's rows first made the tile program of the VNNI reduction loop take 4.8 s to
map instead of 0.8 s. A size an instruction computes from a dot's result (tdpbf16ps'
accumulating f32[16, 16] add) counts only where an operand class holds a dot: a plain
f32[16, 16] add is cut into vaddps rows (on AMX, straight-line code of 64 instructions
compiled in 0.6 s, where it needed a loop before), an add after a dot is left whole.

The rule runs from the first round (``phase1.is_split`` is false for it).
"""
from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterator, Sequence

import z3

from ..ir.graph import Computation, Instruction
from ..ir.ops import DATA_MOVEMENT, ELEMENTWISE
from .axioms import Arg, Make, dot_dims, free_dims, kids, unbatched_dot
from .isa_rules import Pattern
from .rules import Rule, rule
from .terms import ENode, Term, View

Extents = tuple[float, ...]  # per dimension, innermost last; math.inf where α has no bound
# (op, dtype) -> (extents, contraction, on_dot): on_dot where the instruction computes an operand
# with a dot (an accumulating add), looking through views and converts
Tiles = dict[tuple[str, str], frozenset[tuple[Extents, float, bool]]]
PASS_THROUGH = (DATA_MOVEMENT - {"reverse"}) | {"convert"}
MAX_PIECES = 1024  # a larger cut is left to the halving splits
MOVES_DEPTH = 4  # data movement looked through for an operand's converts (a slice of a reshape of ...)
MAX_OUTER_PRODUCTS = 4 * MAX_PIECES  # AMX gemm_f32, f32[32, 64] x f32[64, 32], is 4096


def instruction_tiles(patterns: Sequence[Pattern]) -> Tiles:
    """For each (operator, dtype) an instruction computes, the sizes it computes it at."""
    tiles: dict[tuple[str, str], set] = {}
    for p in patterns:
        corners = _corners(p)
        for n in p.nodes:
            if n.param is not None or not (n.op in ELEMENTWISE or n.op == "dot") or n.op == "copy":
                continue
            contraction = 1.0
            if n.op == "dot":
                lhs = _largest(p.nodes[n.children[0]].shape, corners)
                contraction = math.prod(lhs[d] for d in dict(n.attrs).get("lhs_contracting_dims", ()))
            on_dot = any(_dot_below(p, k) for k in n.children)
            tiles.setdefault((n.op, n.dtype), set()).add((_largest(n.shape, corners), contraction, on_dot))
    return {k: frozenset(v) for k, v in tiles.items()}


def instruction_dots(patterns: Sequence[Pattern], converted: bool = False) -> frozenset[tuple[str, str, str]]:
    """(lhs, rhs, result) dtypes of the instructions' dots, in both operand orders, each
    operand in the dtype the instruction reads it in (before a convert its semantics
    applies: tdpbf16ps reads bf16); ``converted``: a converted operand also in its dtype
    after the convert (dot(s8, s8) -> s32 is dot(convert, convert) once rewritten so)."""
    sigs = set()
    for p in patterns:
        for n in p.nodes:
            if n.op == "dot":
                for a, b in itertools.product(*(_dtypes(p, k, converted) for k in n.children)):
                    sigs |= {(a, b, n.dtype), (b, a, n.dtype)}
    return frozenset(sigs)


def instruction_dot_reads(comp: Computation, dot: Instruction, dots: frozenset[tuple[str, str, str]]) -> bool:
    """Whether an instruction's dot (``dots``: ``instruction_dots``) reads the operand types of
    ``dot``, an instruction of ``comp``, an operand's type before a convert included (AMX's
    int8 dot reads convert(s8) operands of an s32 dot; no instruction reads f32, its tile dot
    reading bf16)."""
    def held(name: str) -> set[str]:  # its own type, and its operand's before a convert
        ins = comp[name]
        own = {ins.tensor_type.dtype.name}
        return own | {comp[ins.operands[0]].tensor_type.dtype.name} if ins.opcode == "convert" else own

    r = dot.tensor_type.dtype.name
    return any((x, y, r) in dots for x in held(dot.operands[0]) for y in held(dot.operands[1]))


def _dtypes(p: Pattern, i: int, converted: bool) -> set[str]:
    n = p.nodes[i]
    if n.op != "convert":
        return {n.dtype}
    return {p.nodes[n.children[0]].dtype} | ({n.dtype} if converted else set())


def _dot_below(p: Pattern, i: int) -> bool:
    """Is pattern node i a dot, looking through views and converts?"""
    n = p.nodes[i]
    return n.op == "dot" or (n.op in PASS_THROUGH and any(_dot_below(p, k) for k in n.children))


def _corners(p: Pattern) -> list[list[tuple]] | None:
    """Substitutions of α at the corners of its ranges; None when an attribute has no finite range."""
    ends = []
    for v in p.alpha.values():
        r = p.ranges.get(id(v))
        if r is None:
            return None
        ends.append([(v, z3.IntVal(r[0])), (v, z3.IntVal(r[1]))])
    return [list(c) for c in itertools.product(*ends)]


def _largest(shape: Sequence, corners: list[list[tuple]] | None) -> Extents:
    out: list[float] = []
    for s in shape:
        if isinstance(s, int):
            out.append(s)
        elif corners is None:
            out.append(math.inf)
        else:
            vals = [z3.simplify(z3.substitute(s, *c) if c else s) for c in corners]
            out.append(max(v.as_long() if z3.is_int_value(v) else math.inf for v in vals))
    return tuple(out)


def aligned(extents: Extents, shape: Sequence[int]) -> list[int]:
    """Tile sizes for ``shape``: ``extents`` aligned from the innermost, missing ones 1,
    modulo unit dimensions on both sides (views relate f32[14, 1] and f32[1, 14]: a
    row instruction of 16 does not cut that column into 14 single elements)."""
    ext = [e for e in extents if e != 1]
    dims = [d for d, n in enumerate(shape) if n != 1]
    tile = [1] * len(shape)
    for d, e in zip(reversed(dims), reversed(ext)):
        tile[d] = int(min(shape[d], max(1, e)))
    return tile


def _starts(n: int, t: int) -> list[tuple[int, int]]:
    return [(s, min(s + t, n)) for s in range(0, n, t)]


def _cut(mk: Make, shape: Sequence[int], tile: Sequence[int], cuts: Sequence[Sequence[tuple[int, int]]],
         args: list[Arg], leaf: Callable[[list[Arg]], Arg]) -> Arg:
    """concat, over every dimension d of ``shape`` cut at ``tile[d]``, of ``leaf`` over
    ``args`` with the operands ``cuts[d]`` names ((operand index, its dimension)) sliced alike."""
    def build(d: int, xs: list[Arg]) -> Arg:
        if d == len(shape):
            return leaf(xs)
        if tile[d] >= shape[d]:
            return build(d + 1, xs)
        pieces = []
        for lo, hi in _starts(shape[d], tile[d]):
            sliced = list(xs)
            for i, od in cuts[d]:
                sliced[i] = mk.slice_dim(xs[i], od, lo, hi)
            pieces.append(build(d + 1, sliced))
        return mk.concat(pieces, d)

    return build(0, list(args))


def permuted_bytes(tiles: Tiles, dots: frozenset[tuple[str, str, str]]) -> int | None:
    """Bytes of a row one int8 dot instruction can permute (by a 0/1 matrix): the most of
    its result columns and contraction that it takes at once (None: no int8 dot)."""
    if ("s8", "s8", "s32") not in dots:
        return None
    return max((min(out[-1], k) for out, k, _ in tiles.get(("dot", "s32"), ())), default=None)


def tile_split_rule(tiles: Tiles, dots: frozenset[tuple[str, str, str]] = frozenset()) -> Rule:
    """``dots``: ``instruction_dots``; a dot none of them takes is cut into outer products."""
    ops = {op for op, _ in tiles}

    @rule("instruction-tiling", ops, ops | {"slice", "concatenate", "add"})
    def tile_split(view: View, c, node: ENode) -> Iterator[Arg]:  # noqa: ANN001
        """op(x, ..) = concat of op over slices of x, .., cut at an instruction's size in one step."""
        if node.op == "convert" and c in view.dot_operands():
            return  # the dot's cuts slice it
        mk = Make(view)
        outer = _outer_products(tiles, dots, mk, node)
        cuts, limit = (outer, MAX_OUTER_PRODUCTS) if outer is not None else (_cuts(tiles, mk, node), MAX_PIECES)
        if any(tile == node.type.shape and k is None for tile, k in cuts):
            return  # some instruction computes it whole
        for tile, k in cuts:
            pieces = math.prod(-(-n // t) for n, t in zip(node.type.shape, tile)) * (k[1] if k else 1)
            if pieces <= min(limit, view.room):  # each piece adds an e-node at least
                try:
                    yield _split(_Bounded(view, view.room), node, tile, k)
                except _PastRoom:
                    pass  # the e-graph could not hold this cut: the halving splits remain

    return tile_split


class _PastRoom(Exception):
    pass


class _Bounded(Make):
    """``Make`` that gives up (``_PastRoom``) past ``room`` terms: a cut of thousands of
    pieces (a 64x64x16 f32 dot is 4096 outer products) built whole, only for the e-graph
    to pass its node limit in that one rewrite, took seconds past the deadline, which is
    checked between rewrites. Terms built bound the e-nodes added from above (a shared
    slice built twice is one e-node)."""

    def __init__(self, view: View, room: float):
        super().__init__(view)
        self.left = room

    def op(self, *args, **kwargs) -> Term:  # noqa: ANN002, ANN003
        self.left -= 1
        if self.left < 0:
            raise _PastRoom
        return super().op(*args, **kwargs)


def _cuts(tiles: Tiles, mk: Make, node: ENode) -> list[tuple[tuple[int, ...], tuple[int, int] | None]]:
    """(tile sizes, contraction cut) for each instruction computing ``node``'s operator and
    dtype from operands like its own (a dot-fed size only where an operand class has a dot),
    each distinct cut once (extents differing in unit dimensions align alike)."""
    sizes = sorted({(e, k) for e, k, on_dot in tiles.get((node.op, node.type.dtype.name), ())
                    if not on_dot or any(mk.view.find(x, "dot") for x in node.children)})
    return list(dict.fromkeys((tuple(aligned(e, node.type.shape)), _contraction(mk, node, k)) for e, k in sizes))


def _outer_products(tiles: Tiles, dots: frozenset[tuple[str, str, str]], mk: Make,
                    node: ENode) -> list[tuple[tuple[int, ...], tuple[int, int] | None]] | None:
    """The cuts of a dot that no instruction's dot takes (its operands, looking through
    converts, are in no dtypes one reads) on a target that multiplies its result type: it
    reaches instructions only as outer products, a multiply per contracted element
    (``dot-outer-product``, ``dot-outer-product-float``), summed (AMX: an f32 dot as
    vfmadd231ps rows, an s32 dot as vpbroadcastd, vpmulld and vpaddd rows). So it is cut to the
    multiply's size with its contraction peeled one element at a time, summed in a left fold,
    the order an accumulating multiply-add (vfmadd231ps) adds them in. With the halving
    splits, the pieces of AMX gemm_f32 (its [1, 16] rows by every aligned range of its 64
    contracted elements) passed 400k e-nodes before any pii graph. [] when the dot has one
    element to contract; None when the cut is not this one.

    A dot with a constant operand keeps the other cuts: the identity, ones and negation
    matmuls the axioms build (x = dot(x, eye)) are no way to compute x with multiply-adds,
    one per element of the constant; cut so, they were 10k of the dots of a row pad's
    e-graph (f32[4, 32] padded to [4, 35] on AMX), which no longer mapped."""
    if node.op != "dot" or ("multiply", node.type.dtype.name) not in tiles:
        return None
    a, b = node.children
    if a in mk.view.constants() or b in mk.view.constants():
        return None
    r = node.type.dtype.name
    deep = node.type.dtype.is_int  # a piece of a converted int8 dot is an s32 dot of views of the converts
    if any((x, y, r) in dots for x in _read_dtypes(mk.view, a, deep) for y in _read_dtypes(mk.view, b, deep)):
        return None
    _, lc, _, _ = dot_dims(node)
    n = math.prod(mk.type(kids(node)[0]).shape[d] for d in lc)
    if n == 1:
        return []  # an outer product already: dot-outer-product-float takes it whole
    if len(lc) != 1:
        return None
    return list(dict.fromkeys((tuple(aligned(e, node.type.shape)), (1, n))
                              for e, _, _ in sorted(tiles[("multiply", r)])))


def _read_dtypes(view: View, c, through_moves: bool = False) -> set[str]:  # noqa: ANN001
    """The dtypes class c holds its value in: its own, and before each convert in it; with
    ``through_moves``, also before each convert that data movement in it reads (the
    slices of converted int8 operands that the dot's cuts build: cut into outer products
    too, AMX K2 lost a tile load's reuse)."""
    out = {view.type(c).dtype.name}
    stack, seen = [(c, 0)], set()
    while stack:
        k, depth = stack.pop()
        if k in seen:
            continue
        seen.add(k)
        for n in view.nodes(k):
            if n.op == "convert":
                out.add(view.type(n.children[0]).dtype.name)
            elif through_moves and n.op in DATA_MOVEMENT and depth < MOVES_DEPTH:
                stack.extend((x, depth + 1) for x in n.children)
    return out


def _contraction(mk: Make, node: ENode, contraction: float) -> tuple[int, int] | None:
    """(tile, pieces) along an integer dot's one contracting dimension when it exceeds the instruction's."""
    if node.op != "dot" or not node.type.dtype.is_int:
        return None
    _, lc, _, _ = dot_dims(node)
    if len(lc) != 1:
        return None
    n = mk.type(kids(node)[0]).shape[lc[0]]
    t = int(min(n, max(1, contraction)))
    return (t, -(-n // t)) if t < n else None


def _split(mk: Make, node: ENode, tile: Sequence[int], k: tuple[int, int] | None) -> Arg:
    args: list[Arg] = kids(node)
    if node.op != "dot":
        ranked = [i for i, a in enumerate(args) if mk.type(a).rank]
        cuts = [[(i, d) for i in ranked] for d in range(node.type.rank)]
        return _cut(mk, node.type.shape, tile, cuts, args, lambda xs: mk.like(node, xs))
    lb, lc, rb, rc = dot_dims(node)
    a, b = args
    cuts = [[(0, dl), (1, dr)] for dl, dr in zip(lb, rb)]
    cuts += [[(0, d)] for d in free_dims(mk.type(a).rank, lb, lc)]
    cuts += [[(1, d)] for d in free_dims(mk.type(b).rank, rb, rc)]

    def leaf(xs: list[Arg]) -> Arg:
        x, y = xs
        if k is None:
            return mk.redot(node, x, y)
        # a batch of one is summed as a plain matmul: the reshape once, not down a chain of adds
        piece = unbatched_dot if all(mk.type(x).shape[d] == 1 for d in lb) else Make.redot
        parts = [piece(mk, node, mk.slice_dim(x, lc[0], lo, hi), mk.slice_dim(y, rc[0], lo, hi))
                 for lo, hi in _starts(mk.type(x).shape[lc[0]], k[0])]
        total = functools.reduce(lambda s, p: mk.op("add", [s, p]), parts)
        return mk.reshape(total, mk.type(mk.redot(node, x, y)).shape)

    return _cut(mk, node.type.shape, tile, cuts, args, leaf)
