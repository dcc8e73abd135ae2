"""Constructive allocation (issue 37, Deliver 4): a linear scan over the order's live
ranges that places storage first fit, before any constraint solver runs.

CSP1–CSP3 are, on the shipped targets and for any target whose address functions h
give each start as one address attribute plus a constant, equalities between starts:
an instruction's output and operands sit where its β say, a slice lies at its operand
plus the offset, a concatenation's operands side by side, an input at its region, the
constants one after another. Those equalities join the starts (and the β) into
classes whose members sit at fixed offsets from each other (a union-find with
offsets), so one number places a class. Then

1. the kernel's HBM regions are packed from address 0 (inputs in order, the outputs,
   the constant section), as the CP-SAT model hints them;
2. the other classes, in the order their storage becomes live, take the position
   within their buffers' bounds and the β's ranges where nothing live at the same
   time lies, preferring a place never used, then the one freed longest ago (reusing
   the place the last value freed would make an instruction wait for its readers: the
   timing model's write-after-read); HBM scratch goes above the kernel's regions.

The result goes through ``check.violations``, the same constraints the CP-SAT model
states, so a wrong allocation is never returned; None when the starts are not of that
form, the equalities conflict, or a class finds no place (CP-SAT then decides, and
names the conflict when there is none)."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable
from typing import Any

from ..isel.extract import PiiGraph
from ..target import TargetDef
from .check import meet, violations
from .liveness import LiveRange, is_identity
from .storage import (Allocation, aligned, const_offsets, const_section_size, extent, input_node, num_inputs,
                      region_inputs)

Key = Hashable  # ("s", node, dim): a start; ("b", node, attr): a β; ("in", i): input i's region; ("const",)


class NotAffine(Exception):
    """An address function is not a start plus a constant over the β."""


class _Lin:
    """c + Σ coeff·var over β variables, for evaluating h with the β unknown."""

    def __init__(self, terms: dict[Key, int], const: int = 0) -> None:
        self.terms, self.const = {k: c for k, c in terms.items() if c}, const

    @staticmethod
    def of(x: Any) -> _Lin:
        if isinstance(x, _Lin):
            return x
        if isinstance(x, bool) or not isinstance(x, int):
            raise NotAffine(repr(x))
        return _Lin({}, x)

    def __add__(self, o: Any) -> _Lin:
        o = _Lin.of(o)
        terms = dict(self.terms)
        for k, c in o.terms.items():
            terms[k] = terms.get(k, 0) + c
        return _Lin(terms, self.const + o.const)

    __radd__ = __add__

    def __neg__(self) -> _Lin:
        return _Lin({k: -c for k, c in self.terms.items()}, -self.const)

    def __sub__(self, o: Any) -> _Lin:
        return self + -_Lin.of(o)

    def __rsub__(self, o: Any) -> _Lin:
        return _Lin.of(o) + -self

    def __mul__(self, o: Any) -> _Lin:
        o = _Lin.of(o)
        if self.terms and o.terms:
            raise NotAffine("product of address attributes")
        k, lin = (o.const, self) if not o.terms else (self.const, o)
        return _Lin({v: c * k for v, c in lin.terms.items()}, lin.const * k)

    __rmul__ = __mul__


class _LinAlgebra:
    """h's operations beyond + - *: defined on constants only."""

    @staticmethod
    def _ints(xs: tuple) -> tuple[int, ...]:
        if any(isinstance(x, _Lin) and x.terms for x in xs):
            raise NotAffine("division, modulo, min or max of an address attribute")
        return tuple(x.const if isinstance(x, _Lin) else x for x in xs)

    def div(self, a: Any, b: Any) -> int:
        a, b = self._ints((a, b))
        return a // b

    def mod(self, a: Any, b: Any) -> int:
        a, b = self._ints((a, b))
        return a % b

    def min(self, *xs: Any) -> int:
        return min(self._ints(xs))

    def max(self, *xs: Any) -> int:
        return max(self._ints(xs))


LIN = _LinAlgebra()


class _Ties:
    """Union-find with offsets: value(key) = value(root) + offset; roots may be pinned."""

    def __init__(self) -> None:
        self.parent: dict[Key, tuple[Key, int]] = {}
        self.pinned: dict[Key, int] = {}

    def find(self, k: Key) -> tuple[Key, int]:
        path = []
        off = 0
        while k in self.parent:
            path.append(k)
            k, d = self.parent[k]
            off += d
        acc = off
        for p in path:  # compress: every key on the path points at the root
            d = self.parent[p][1]
            self.parent[p] = (k, acc)
            acc -= d
        return k, off

    def tie(self, a: Key, b: Key, d: int) -> bool:
        """value(a) = value(b) + d; False when that contradicts what is known."""
        (ra, oa), (rb, ob) = self.find(a), self.find(b)
        if ra == rb:
            return oa == ob + d
        # value(ra) = value(rb) + ob + d - oa
        shift = ob + d - oa
        if ra in self.pinned and rb in self.pinned:
            return self.pinned[ra] == self.pinned[rb] + shift
        self.parent[ra] = (rb, shift)
        if ra in self.pinned:
            self.pinned[rb] = self.pinned.pop(ra) - shift
        return True

    def pin(self, a: Key, c: int) -> bool:
        r, off = self.find(a)
        if r in self.pinned:
            return self.pinned[r] + off == c
        self.pinned[r] = c - off
        return True


def _ties(target: TargetDef, g: PiiGraph) -> _Ties | None:
    """CSP1–CSP3's equalities; None when a start is not affine or they conflict."""
    t = _Ties()
    hbm = target.hbm.name
    ok = True
    for v, n in enumerate(g.nodes):
        if n.is_instruction:
            ok = _instruction_ties(target, g, t, v)
        elif is_identity(n):
            ok = _identity_ties(g, t, v)
        elif n.kind == "input" and n.buffer != hbm:
            ok = all(t.pin(("s", v, k), 0) for k in range(len(target.buffers[n.buffer].access_shape)))
        elif n.kind == "input":
            ok = t.tie(("s", v, 0), ("in", n.attrs["index"]), 0)
        if not ok:
            return None
    if any(i == -1 for i, _ in g.resident):
        for o in g.outputs:
            if not all(t.pin(("s", o, k), 0) for k in range(len(target.buffers[g.nodes[o].buffer].access_shape))):
                return None
    for k, i in g.alias.items():
        if not t.tie(("in", i), ("s", g.outputs[k], 0), 0):
            return None
    for v, off in const_offsets(g, target).items():
        if not t.tie(("s", v, 0), ("const",), off):
            return None
    return t


def _instruction_ties(target: TargetDef, g: PiiGraph, t: _Ties, v: int) -> bool:
    n = g.nodes[v]
    ins = target.instructions[n.op]
    a: dict[str, Any] = {d.name: n.attrs[d.name] for d in ins.comp_attrs}
    a.update({d.name: _Lin({("b", v, d.name): 1}) for d in ins.addr_attrs})
    try:
        bounds = ins.h(a, LIN)
    except (NotAffine, TypeError, ZeroDivisionError):
        return False
    for j, x in enumerate((v, *n.args)):
        starts, lengths = bounds[j]
        ext = extent(g, target, x)
        for k, (st, ln) in enumerate(zip(starts, lengths)):
            st, ln = _Lin.of(st), _Lin.of(ln)
            if ln.terms or ln.const != ext[k]:
                return False
            if not st.terms:
                ok = t.pin(("s", x, k), st.const)
            elif len(st.terms) == 1 and next(iter(st.terms.values())) == 1:
                ok = t.tie(("s", x, k), next(iter(st.terms)), st.const)
            else:
                return False
            if not ok:
                return False
    return True


def _identity_ties(g: PiiGraph, t: _Ties, v: int) -> bool:
    n = g.nodes[v]
    if n.op == "slice^H":
        (x,) = n.args
        return all(t.tie(("s", v, k), ("s", x, k), d.start) for k, d in enumerate(n.attrs["slice"]))
    (dim,) = n.attrs["dimensions"]
    off = 0
    for x in n.args:
        if not all(t.tie(("s", x, k), ("s", v, k), off if k == dim else 0) for k in range(n.type.rank)):
            return False
        off += g.nodes[x].type.shape[dim]
    return True


class _Placer:
    """Gives each class of starts a value (module doc, steps 1 and 2)."""

    def __init__(self, target: TargetDef, g: PiiGraph, ranges: dict[int, LiveRange], ties: _Ties) -> None:
        self.target, self.g, self.ranges, self.ties = target, g, ranges, ties
        self.ext = {v: extent(g, target, v) for v in range(len(g.nodes))}
        self.members: dict[Key, list[tuple[Key, int]]] = defaultdict(list)
        for key in self._keys():
            root, off = ties.find(key)
            self.members[root].append((key, off))
        self.value: dict[Key, int] = {}  # root -> value
        self.start: dict[int, dict[int, int]] = defaultdict(dict)  # node -> dim -> start, as placed
        self.placed: dict[str, list[int]] = defaultdict(list)  # buffer -> nodes with storage and a start
        self.last_end: dict[tuple[str, int, int], int] = {}  # (buffer, dim, start) -> when a value there died
        self.used: dict[tuple[str, int], set[int]] = defaultdict(set)  # (buffer, dim) -> starts of last_end
        self.ends: dict[tuple[str, int], set[int]] = defaultdict(set)  # (buffer, dim) -> where placed values end

    def _keys(self) -> list[Key]:
        keys: list[Key] = []
        for v, n in enumerate(self.g.nodes):
            keys += [("s", v, k) for k in range(len(self.target.buffers[n.buffer].access_shape))]
            if n.is_instruction:
                keys += [("b", v, d.name) for d in self.target.instructions[n.op].addr_attrs]
        keys += [("in", i) for i in range(num_inputs(self.g))]
        return keys + [("const",)]

    def domain(self, root: Key) -> tuple[int, int]:
        lo, hi = -(1 << 62), 1 << 62
        for key, off in self.members[root]:
            if key[0] == "s":
                v, k = key[1], key[2]
                size = self.target.buffers[self.g.nodes[v].buffer].access_shape[k]
                lo, hi = max(lo, -off), min(hi, size - self.ext[v][k] - off)
            elif key[0] == "b":
                d = next(d for d in self.target.instructions[self.g.nodes[key[1]].op].addr_attrs if d.name == key[2])
                lo, hi = max(lo, d.lo - off), min(hi, d.hi - off)
            else:
                lo = max(lo, -off)
        return lo, hi

    def clashes(self, root: Key, x: int) -> bool:
        """Whether the class placed at x overlaps storage live at the same time."""
        for key, off in self.members[root]:
            if key[0] != "s" or key[1] not in self.ranges:
                continue
            v, k = key[1], key[2]
            mine = dict(self.start[v])
            mine[k] = x + off
            r = self.ranges[v]
            for u in self.placed[self.g.nodes[v].buffer]:
                if u == v or not self.ranges[u].overlaps(r):
                    continue
                theirs = self.start[u]
                dims = range(len(self.ext[v]))
                # a pair is compared once both are placed in every dimension (the last of the
                # classes placing them compares it)
                if all(j in mine and j in theirs and meet(mine[j], self.ext[v][j], theirs[j], self.ext[u][j])
                       for j in dims):
                    return True
        return False

    def assign(self, root: Key, x: int) -> None:
        self.value[root] = x
        for key, off in self.members[root]:
            if key[0] != "s":
                continue
            v, k = key[1], key[2]
            buf = self.g.nodes[v].buffer
            if v in self.ranges and not self.start[v]:
                self.placed[buf].append(v)
            self.start[v][k] = x + off
            if v in self.ranges:
                spot = (buf, k, x + off)
                self.last_end[spot] = max(self.last_end.get(spot, -1), self.ranges[v].end)
                self.used[buf, k].add(x + off)
                self.ends[buf, k].add(x + off + self.ext[v][k])

    def expire(self, t: int) -> None:
        """Forget placed storage dead before step t: no class placed later is live then."""
        for buf, nodes in self.placed.items():
            self.placed[buf] = [u for u in nodes if self.ranges[u].end >= t]

    def fit(self, root: Key, floor: int = 0) -> bool:
        """Place ``root``'s class: a never-used place first, then the longest-freed one."""
        lo, hi = self.domain(root)
        lo = max(lo, floor)
        if lo > hi:
            return False
        cands = {lo}
        for key, off in self.members[root]:
            if key[0] != "s" or key[1] not in self.ranges:
                continue
            v, k = key[1], key[2]
            buf = self.g.nodes[v].buffer
            for u in self.placed[buf]:
                if k in self.start[u]:
                    cands.add(self.start[u][k] + self.ext[u][k] - off)
            cands.update(s - off for s in self.used[buf, k] | self.ends[buf, k])
        scored = sorted((self._age(root, x), x) for x in cands if lo <= x <= hi)
        for _, x in scored:
            if not self.clashes(root, x):
                self.assign(root, x)
                return True
        return False

    def _age(self, root: Key, x: int) -> int:
        """When a value last died at the class's places (-1: never used)."""
        out = -1
        for key, off in self.members[root]:
            if key[0] == "s":
                out = max(out, self.last_end.get((self.g.nodes[key[1]].buffer, key[2], x + off), -1))
        return out

    def live_from(self, root: Key) -> int:
        starts = [self.ranges[key[1]].start for key, _ in self.members[root] if key[0] == "s" and key[1] in self.ranges]
        return min(starts, default=1 << 62)


def tied_overlap(target: TargetDef, g: PiiGraph, ranges: dict[int, LiveRange]) -> tuple[int, int] | None:
    """Two values live at the same time whose storage CSP1–CSP3's equalities put in
    overlapping bytes of a one-dimensional buffer (a column tile's store under a row that
    a store before it wrote into the same output bytes): no allocation of this order
    exists, nor of any order in which the two interfere (CSP4). None when there is none,
    or the equalities are not of first fit's form."""
    ties = _ties(target, g)
    if ties is None:
        return None
    classes: dict[Key, list[tuple[int, int, int]]] = defaultdict(list)  # root -> (offset, end, node)
    for v in ranges:
        if len(target.buffers[g.nodes[v].buffer].access_shape) == 1:
            root, off = ties.find(("s", v, 0))
            classes[root].append((off, off + extent(g, target, v)[0], v))
    for members in classes.values():
        live: list[tuple[int, int, int]] = []
        for lo, hi, v in sorted(members):
            live = [m for m in live if m[1] > lo]
            for _, _, u in live:
                if ranges[u].overlaps(ranges[v]):
                    return min(u, v), max(u, v)
            live.append((lo, hi, v))
    return None


def construct(target: TargetDef, g: PiiGraph, order: list[int], ranges: dict[int, LiveRange]) -> Allocation | None:
    """A valid allocation of ``g`` in ``order`` built first fit, or None (module doc)."""
    ties = _ties(target, g)
    if ties is None:
        return None
    p = _Placer(target, g, ranges, ties)
    for root, c in ties.pinned.items():
        if root in p.members:
            lo, hi = p.domain(root)
            if not lo <= c <= hi or p.clashes(root, c):
                return None
            p.assign(root, c)
    floor = _pack_hbm(target, g, p)
    if floor is None:
        return None
    hbm = target.hbm.name
    rest = sorted((r for r in p.members if r not in p.value), key=lambda r: (p.live_from(r), repr(r)))
    for root in rest:
        in_hbm = any(key[0] == "s" and g.nodes[key[1]].buffer == hbm for key, _ in p.members[root])
        p.expire(p.live_from(root))
        if not p.fit(root, floor if in_hbm else 0):
            return None
    return _allocation(target, g, order, ranges, p)


def _pack_hbm(target: TargetDef, g: PiiGraph, p: _Placer) -> int | None:
    """Inputs, outputs and the constant section packed from address 0; the end."""
    hbm = target.hbm.name
    at = 0
    regions = [(("in", i), p.ext[input_node(g, i)][0]) for i in region_inputs(g, target)]
    regions += [(("s", o, 0), p.ext[o][0]) for k, o in enumerate(g.outputs)
                if k not in g.alias and g.nodes[o].buffer == hbm]
    if const_offsets(g, target):
        regions.append((("const",), const_section_size(g, target)))
    for key, size in regions:
        root, off = p.ties.find(key)
        if root not in p.value:
            lo, hi = p.domain(root)
            if not lo <= at - off <= hi or p.clashes(root, at - off):
                return None
            p.assign(root, at - off)
        at = aligned(max(at, p.value[root] + off + size))
    return at


def _allocation(target: TargetDef, g: PiiGraph, order: list[int], ranges: dict[int, LiveRange],
                p: _Placer) -> Allocation | None:
    def val(key: Key) -> int | None:
        root, off = p.ties.find(key)
        return p.value[root] + off if root in p.value else None

    starts = {v: tuple(val(("s", v, k)) for k in range(len(target.buffers[n.buffer].access_shape)))
              for v, n in enumerate(g.nodes)}
    attrs = {}
    for v in order:
        n = g.nodes[v]
        ins = target.instructions[n.op]
        vals = {d.name: n.attrs[d.name] for d in ins.comp_attrs}
        vals.update({d.name: val(("b", v, d.name)) for d in ins.addr_attrs})
        attrs[v] = vals
    hbm_inputs = set(region_inputs(g, target))
    inputs = [val(("in", i)) if i in hbm_inputs else -1 for i in range(num_inputs(g))]
    consts = {v: starts[v][0] for v in const_offsets(g, target)}
    a = Allocation(list(order), starts, attrs, inputs, [starts[o][0] for o in g.outputs], consts, solver="first-fit")
    return None if violations(target, g, ranges, a) else a
