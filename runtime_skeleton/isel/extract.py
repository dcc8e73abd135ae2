"""Extraction of pii graphs (Act §5.3, Fig. 37, Appendix C.3).

Bottom-up, e-classes that are compile-time constants are found (a class is
constant if one of its nodes is a literal/iota or has only constant children).
Top-down from each output (which must end in d0), a pii graph is chosen guided
by buffers: a class wanted in buffer d can be produced by a pii whose output
buffer is d, then its operands are wanted in the instruction's input buffers.
The search stops at a flattened kernel input or a constant class wanted in d0.
``enumerate_graphs`` yields every such choice within a node bound, so calling it
with a growing bound enumerates all pii graphs (§5.4).
"""
from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import budget
from ..ir.types import TensorType
from ..target import TargetDef
from .egraph import ClassId
from .identity import identity_ok
from .isa_rules import UNDEF
from .terms import CONST_LEAVES, PII_PREFIX, ENode, Term, View

MAX_REACH = 200_000  # requirements explored per bound computation (a bound on memory and time)

Req = tuple  # (e-class, buffer it is wanted in[, a tag naming a storage of its own: a copy, or the storage an
#              instruction overwrites in place])
COPY = "copy"
IN_PLACE = "in-place"
WRITTEN = (("written", None),)  # the tag of a value some instruction must write: not a view of an input


def is_written(req: Req) -> bool:
    return req[2:] == WRITTEN


def copy_tag(anchor: Req | None, at: Any, c: ClassId) -> tuple:
    """A copy of class c: its own storage, named by where it lies. An identity
    instruction's operands are its own storage side by side, so a value that a
    concatenation holds twice (the halves of a broadcast are equal classes) must be
    produced twice, not shared, or no allocation exists. A copy is named by its
    anchor (the nearest requirement above it that is neither a copy nor overwritten in
    place), its offset in the anchor's access dimensions, and its class; everything an
    identity instruction holds inside a copy is a copy too, named the same way. So one
    region of one anchor is one requirement however the concatenations above it were
    cut (naming copies by their path instead made the requirements exponential in the
    number of rows: a broadcast to 16 rows exhausted memory). Repeated outputs have no
    anchor: ``at`` is the output's position."""
    return (COPY, anchor, at, c)


def in_place_tag(anchor: Req, at: Any) -> tuple:
    """The operand an instruction overwrites in place (read-modify-write: its output
    aliases that input), named like a copy by the place it shares with the
    instruction's output: the output's anchor and offset."""
    return (IN_PLACE, anchor, at)


def is_copy(req: Req) -> bool:
    return len(req) > 2 and req[2][0] == COPY


def is_in_place(req: Req) -> bool:
    return len(req) > 2 and req[2][0] == IN_PLACE


def _in_place_part(req: Req) -> bool:
    """A copy made of a part of a concatenation overwritten in place (``_identity_reqs``)."""
    return is_copy(req) and req[2][-1] == IN_PLACE


@dataclass(frozen=True)
class Choice:
    kind: str  # "input" | "const" | "undef" | "pii"
    node: ENode | None = None
    reqs: tuple[Req, ...] = ()

    @property
    def piis(self) -> int:
        """The pii nodes this choice adds itself (its operands' come on top)."""
        return 1 if self.kind == "pii" else 0


@dataclass
class PiiNode:
    kind: str  # "input" | "const" | "pii"
    op: str  # instruction name, slice^H, concat^H; "input" / "const" for leaves
    buffer: str
    type: TensorType
    attrs: dict[str, Any]
    args: tuple[int, ...]  # indices of operand PiiNodes
    eclass: ClassId
    term: Term | None = None  # constants: the expression computing the value

    @property
    def is_instruction(self) -> bool:
        return self.kind == "pii" and not self.op.endswith("^H")


@dataclass
class PiiGraph:
    nodes: list[PiiNode]  # operands before users
    outputs: list[int]
    alias: dict[int, int] = field(default_factory=dict)  # output position -> the input whose storage it takes
    resident: tuple[tuple[int, str], ...] = ()  # Module.resident: on-chip inputs (and output, -1)
    output_written: bool = False  # Module.output_written: outputs apart from the inputs and constants

    @property
    def donated(self) -> set[int]:
        """Inputs the program may overwrite (their storage becomes an output's, or they live on chip)."""
        return set(self.alias.values()) | {i for i, _ in self.resident if i >= 0}

    @property
    def num_instructions(self) -> int:
        return sum(1 for n in self.nodes if n.is_instruction)

    def key(self) -> tuple:
        return tuple((n.op, n.buffer, tuple(sorted(n.attrs.items())), n.args, n.eclass) for n in self.nodes)

    def describe(self) -> str:
        lines = []
        for i, n in enumerate(self.nodes):
            args = ", ".join(f"%{a}" for a in n.args)
            attrs = " ".join(f"{k}={v}" for k, v in sorted(n.attrs.items()) if k != "buffer" and n.kind == "pii"
                             and not n.op.endswith("^H"))
            if n.kind == "input":
                lines.append(f"%{i} = input {n.attrs['index']} : {n.type} @{n.buffer}")
            elif n.kind in ("const", "undef"):
                lines.append(f"%{i} = {n.kind} : {n.type} @{n.buffer}")
            else:
                lines.append(f"%{i} = {n.op}({args}) {attrs}".rstrip() + f" : {n.type} @{n.buffer}")
        lines.append("outputs: " + ", ".join(f"%{o}" for o in self.outputs))
        return "\n".join(lines)


def shallowest_nodes(view: View, const: set[ClassId]) -> dict[ClassId, ENode]:
    """For each constant class, a node of an acyclic expression of smallest depth."""
    depth: dict[ClassId, int] = {}
    best: dict[ClassId, ENode] = {}
    changed = True
    while changed:
        changed = False
        for k in const:
            for n in view.nodes(k):
                if n.is_pii or not (n.op in CONST_LEAVES or n.children):
                    continue
                if not all(x in depth for x in n.children):
                    continue
                d = 1 + max((depth[x] for x in n.children), default=0)
                if d < depth.get(k, 1 << 30):
                    depth[k], best[k] = d, n
                    changed = True
    return best


def const_term(best: dict[ClassId, ENode], c: ClassId) -> Term:
    """An acyclic expression for a constant class (``shallowest_nodes``)."""
    n = best[c]
    return Term(n.op, n.type, tuple(const_term(best, x) for x in n.children), n.attrs)


@dataclass
class Extractor:
    target: TargetDef
    view: View
    root_buffers: list[str] | None = None  # where each output is wanted (default: all in HBM)
    const: set[ClassId] = field(default_factory=set)
    deadline: float | None = None  # budget.now() after which the bounds stop exploring
    written: tuple[bool, ...] = ()  # outputs an instruction must write (not views of inputs), by position
    alias_input: int | None = None  # the input whose storage the output takes over: it may be viewed
    # outputs written into regions of their own (a piece's, Module.output_written): what the
    # output's identity instructions hold is written inside the output's region, and no view
    # of the constant section either
    apart: bool = False

    def __post_init__(self) -> None:
        self.const = set(self.view.constants())
        self.hbm = self.target.hbm.name
        self._options: dict[Req, list[Choice]] = {}
        self._bounds: dict[tuple, dict[Req, int]] = {}  # (roots, shared) -> lower_bounds (the view is frozen)
        self._graphs: dict[tuple, tuple] = {}  # roots -> their AND-OR graph (_and_or)
        self.truncated = False  # a bound computation stopped at MAX_REACH or the deadline
        self.misplaced = 0  # graphs dropped: a concat^H of input views no allocation places
        self._const_nodes: dict[ClassId, ENode] | None = None
        # per pii operator: the buffers its operands are read from, and the operand it overwrites in place
        self._reads = {PII_PREFIX + name: (tuple(s.buffer for s in ins.inputs), ins.alias)
                       for name, ins in self.target.instructions.items()}

    def _shallowest(self) -> dict[ClassId, ENode]:
        """``shallowest_nodes`` of the constant classes, once (the view is frozen)."""
        if self._const_nodes is None:
            self._const_nodes = shallowest_nodes(self.view, self.const)
        return self._const_nodes

    def options(self, req: Req) -> list[Choice]:
        if req in self._options:
            return self._options[req]
        c, buf = req[0], req[1]
        out: list[Choice] = []
        nodes = self.view.nodes(c)
        inputs = [n for n in nodes if n.op == "input" and (n.attrs.get("buffer") or self.hbm) == buf]
        viewless = self._viewless(req)
        if viewless:  # only the input whose storage the output takes over, where the output lies
            inputs = [n for n in inputs if n.attrs["index"] == self.alias_input and not any(self._place(req)[1])]
        elif is_copy(req):  # an input's storage is where the caller put it, once
            inputs = []
        if inputs:
            out.append(Choice("input", inputs[0]))
        elif buf == self.hbm and c in self.const and not (viewless and self.apart):
            out.append(Choice("const"))
        if any(n.op == UNDEF for n in nodes):
            out.append(Choice("undef"))
        for n in nodes:
            if n.op.startswith(PII_PREFIX) and n.attrs["buffer"] == buf and not self._overwrites_own_user(n, req):
                out.append(Choice("pii", n, self._operand_reqs(req, n)))
            elif n.op in ("slice^H", "concat^H") and identity_ok(self.target.buffers[buf], n, self.view):
                reqs = self._identity_reqs(req, n)
                if reqs is not None:
                    out.append(Choice("pii", n, reqs))
                    if n.op == "concat^H" and buf == self.hbm and self._joins_input_slices(reqs):
                        out.append(Choice("pii", n, self._identity_reqs(req, n, copies=True)))  # type: ignore[arg-type]
        self._options[req] = out
        return out

    def _identity_reqs(self, req: Req, n: ENode, copies: bool = False) -> tuple[Req, ...] | None:
        """An identity instruction's operands are its own storage: inside a copy (or an
        output written apart), copies at their offsets; a class a concatenation holds
        twice, a new copy for each repetition. The parts of a concatenation overwritten in
        place are copies too: the instruction destroys each, so none may be shared with
        another reader of its value (which may run later: then no order allocates it). A
        slice overwritten in place, or such a part that is a slice of storage reaching beyond
        the part, still shares its operand, whose other bytes may be read later (a
        read-modify-write store of the next column tile into an output row). Otherwise None
        when a slice's operand would reach outside a copy's anchor (the copies of one anchor
        lie within it). ``copies``: a concatenation's operands copies at their offsets in any case."""
        buf = req[1]
        m = len(self.target.buffers[buf].access_shape)
        anchor, base = self._place(req)
        viewless = self._viewless(req)
        inside = copies or is_copy(req) or (viewless and self.apart)
        tag = WRITTEN if viewless and not inside else ()  # what an identity makes of written storage is written
        if n.op == "slice^H":
            (k,) = n.children
            if not inside:
                return ((k, buf) + tag,)
            at = tuple(b - d.start for b, d in zip(base, n.attrs["slice"]))
            extent = self.view.type(anchor[0]).shape
            if any(o < 0 or o + s > e for o, s, e in zip(at, self.view.type(k).shape[:m], extent)):
                # a part overwritten in place may be a slice of storage reaching beyond it (a column
                # tile's store over the bytes the store before it wrote between its rows): shared
                return ((k, buf) + (WRITTEN if viewless else ()),) if _in_place_part(req) else None
            return ((k, buf, copy_tag(anchor, at, k)),)
        (dim,) = n.attrs["dimensions"]
        part = () if inside or not is_in_place(req) else (IN_PLACE,)  # marks the parts made copies here
        inside = inside or is_in_place(req)
        out: list[Req] = []
        seen: set[ClassId] = set()
        step = 0
        for k in n.children:
            if inside or k in seen:
                at = tuple(b + (step if i == dim else 0) for i, b in enumerate(base))
                out.append((k, buf, copy_tag(anchor, at, k) + (part if k not in seen else ())))
            else:
                out.append((k, buf) + tag)
            seen.add(k)
            step += self.view.type(k).shape[dim]
        return tuple(out)

    def _joins_input_slices(self, reqs: tuple[Req, ...]) -> bool:
        """Whether a concatenation in HBM joins slices of the inputs as they lie: it then lies
        in them only where they are side by side in order (``misplaced_input_views``), so
        the concatenation gets a second choice, of copies (a reverse's elements moved one by one)."""
        slices = self.view.input_slices()
        return any(len(r) == 2 and r[0] in slices for r in reqs)

    def _viewless(self, req: Req) -> bool:
        """Whether req's storage must not be an input's (but the aliased one's): a written
        requirement, or a copy or an operand overwritten in place anchored in one (a
        repeated output's copy: that output's). So the operand a read-modify-write store
        updates in place and the written output's parts that it holds are one requirement."""
        if is_written(req):
            return True
        if len(req) < 3:
            return False
        anchor = req[2][1]
        return self._written_output(req[2][2]) if anchor is None else self._viewless(anchor)

    def _written_output(self, i: int) -> bool:
        return i < len(self.written) and self.written[i]

    def _place(self, req: Req) -> tuple[Req, tuple[int, ...]]:
        """The anchor a requirement lies in and its offset there (a requirement that is
        neither a copy nor overwritten in place, or an output's copy, is its own anchor).
        Anchors are never tagged by an anchor themselves, so names do not nest."""
        if len(req) > 2 and req[2][1] is not None:
            return req[2][1], req[2][2]
        return req, (0,) * len(self.target.buffers[req[1]].access_shape)

    def _operand_reqs(self, req: Req, n: ENode) -> tuple[Req, ...]:
        """What a pii's operands are wanted as. An operand the instruction overwrites in
        place is wanted for this use alone, not shared with other users, which still
        need its value (four matmuls accumulating into zeroed tiles each get their own
        zeroed tile). It lies where the output will (``in_place_tag``): a chain of
        in-place instructions is linear, so one class appears at one place of it once,
        and (class, buffer, place) is one requirement. (Named by the user's whole
        requirement, the names nested as deep as the chains, and their number grew
        exponentially with the chains an e-graph holds: a fuzz kernel's s32 sums in
        Gemmini's accumulator passed 200k requirements.)"""
        buffers, a = self._reads[n.op]
        reqs = tuple(zip(n.children, buffers))
        if a is None:
            return reqs
        anchor, at = self._place(req)
        return reqs[:a] + (reqs[a] + (in_place_tag(anchor, at),),) + reqs[a + 1:]

    def _overwrites_own_user(self, n: ENode, req: Req) -> bool:
        """Whether n would overwrite, in place of its anchor, the anchor's own value:
        computing a value into storage that a chain then brings back to the same value.
        A chain member above is caught as a cycle of requirements instead."""
        a = self._reads[n.op][1]
        if a is None:
            return False
        anchor, at = self._place(req)
        return anchor[0] == n.children[a] and not any(at)

    def enumerate(self, roots: list[ClassId], max_nodes: int, limit: int,
                  max_steps: int = 20_000) -> list[PiiGraph]:
        """Up to ``limit`` distinct pii graphs with at most ``max_nodes`` piis, smallest first.

        Depth-first over (class, buffer) requirements, cheapest option first by the
        piis each needs as a tree (so the first graphs are small), pruning choices that
        close a cycle or cannot fit the bound even if their operands share every pii
        (a tree count would prune graphs that fit by sharing); ``max_steps`` bounds the
        search on huge e-graphs."""
        if not self.realizable(roots):
            return []
        reqs = self.root_reqs(roots)
        self._need = self.lower_bounds(reqs, shared=True)
        if any(self._need.get(r, 0) > max_nodes for r in reqs):
            return []  # every choice at that output would be pruned below (a held e-graph's Γ still growing)
        # a computation stopped at the deadline may have counted fewer: take what both counted
        bound = {r: v for r, v in self.lower_bounds(reqs).items() if r in self._need}
        found: dict[tuple, PiiGraph] = {}
        self._steps = max_steps
        budget.spend("explore", len(reqs))
        for assign, _ in self._realize_all(reqs, {}, set(), 0, max_nodes, bound):
            g = self._graph(assign, reqs)
            if g is not None:
                budget.spend("graph")
                found.setdefault(g.key(), g)
                if len(found) >= limit:
                    break
        return sorted(found.values(), key=lambda g: (len(g.nodes), g.num_instructions))

    def root_reqs(self, roots: list[ClassId]) -> list[Req]:
        """Outputs that are the same value are copies (each has its own region); written
        outputs in HBM are tagged so (``WRITTEN``)."""
        reqs: list[Req] = []
        for i, (r, b) in enumerate(zip(roots, self.root_buffers or [self.hbm] * len(roots))):
            if any(q[:2] == (r, b) for q in reqs):
                reqs.append((r, b, copy_tag(None, i, r)))
            else:
                reqs.append((r, b) + (WRITTEN if b == self.hbm and self._written_output(i) else ()))
        return reqs

    def realizable(self, roots: list[ClassId]) -> bool:
        """Whether some choice of piis produces every output (within no node bound)."""
        reqs = self.root_reqs(roots)
        bound = self.lower_bounds(reqs)
        return all(r in bound for r in reqs)

    def lower_bounds(self, roots: list[Req], shared: bool = False) -> dict[Req, int]:
        """Fewest piis to realize each reachable requirement, as a tree (operands' counts
        summed: what a choice costs when nothing is shared, to order choices), or with
        ``shared`` an admissible bound for a DAG (the largest operand's count: operands may
        share all their piis); requirements that cannot be realized at all are absent."""
        key = (tuple(roots), shared)
        if key not in self._bounds:
            self._bounds[key] = self._lower_bounds(roots, shared)
        return self._bounds[key]

    def _lower_bounds(self, roots: list[Req], shared: bool) -> dict[Req, int]:
        # Knuth's generalisation of Dijkstra to AND-OR graphs: a requirement's count is
        # final when it is the smallest pending, and an option is counted once all its
        # operands are final (both combinations only grow with their operands). A sweep
        # to a fixpoint instead took one pass per level of the e-graph: seconds past the
        # compile's time limit on kernels of a few dozen operators.
        users, waiting, leaves = self._and_or(tuple(roots))
        waiting = dict(waiting)
        heap = list(leaves)  # (count, discovery number, requirement): ties pop in discovery order
        heapq.heapify(heap)
        tie = itertools.count(len(leaves))
        best: dict[Req, int] = {}
        while heap:
            v, _, r = heapq.heappop(heap)
            if r in best:
                continue
            best[r] = v
            for parent, ch, i in users.get(r, ()):
                waiting[(parent, i)] -= 1
                if waiting[(parent, i)] == 0 and parent not in best:
                    xs = [best[x] for x in ch.reqs]
                    cost = ch.piis + (max(xs, default=0) if shared else sum(xs))
                    heapq.heappush(heap, (cost, next(tie), parent))
        return best

    def _and_or(self, roots: tuple[Req, ...]) -> tuple[dict, dict, list]:
        """The requirements reachable from ``roots`` as an AND-OR graph, built once for both
        bounds: each requirement's users (parent, choice, choice number), each choice's
        count of distinct operands, and the choices without operands as heap entries."""
        if roots in self._graphs:
            return self._graphs[roots]
        reach: list[Req] = []
        seen: set[Req] = set()
        stack = list(roots)
        while stack:
            r = stack.pop()
            if r in seen:
                continue
            seen.add(r)
            reach.append(r)
            for ch in self.options(r):
                stack.extend(ch.reqs)
            if len(reach) % 1024 == 0:
                budget.spend("explore", 1024)
            if self._exhausted(len(reach)):
                # what is left unexplored has no count: its options are not taken (incomplete, not unsound)
                self.truncated = True
                break
        users: dict[Req, list[tuple[Req, Choice, int]]] = {}
        waiting: dict[tuple[Req, int], int] = {}
        leaves: list[tuple[int, int, Req]] = []
        for r in reach:
            for i, ch in enumerate(self.options(r)):
                operands = set(ch.reqs)
                if not operands:
                    leaves.append((ch.piis, len(leaves), r))
                waiting[(r, i)] = len(operands)
                for x in operands:
                    users.setdefault(x, []).append((r, ch, i))
        self._graphs[roots] = users, waiting, leaves
        return users, waiting, leaves

    def _exhausted(self, explored: int) -> bool:
        return explored >= MAX_REACH or (explored % 1024 == 0 and self.deadline is not None
                                          and budget.now() > self.deadline)

    def _realize_all(self, reqs: list[Req], assign: dict[Req, Choice], path: set[Req], count: int,
                     max_nodes: int, bound: dict[Req, int]) -> Iterator[tuple[dict[Req, Choice], int]]:
        """Every joint realization of ``reqs``, backtracking over them in order. An explicit
        stack of the operands' generators, not recursion along the list: a concatenate of a
        few hundred rows would nest a generator per operand, past Python's recursion limit."""
        if not reqs:
            yield assign, count
            return
        stack = [self._realize(reqs[0], assign, path, count, max_nodes, bound)]
        while stack:
            found = next(stack[-1], None)
            if found is None:  # this operand has no more choices: back to the one before
                stack.pop()
            elif len(stack) == len(reqs):
                yield found
            else:
                a, c = found
                stack.append(self._realize(reqs[len(stack)], a, path, c, max_nodes, bound))

    def _realize(self, req: Req, assign: dict[Req, Choice], path: set[Req], count: int, max_nodes: int,
                 bound: dict[Req, int]) -> Iterator[tuple[dict[Req, Choice], int]]:
        if req in assign:
            if req not in path:  # shared with an already realized subgraph; on the path would be a cycle
                yield assign, count
            return
        options = [ch for ch in self.options(req) if all(x in bound for x in ch.reqs)]
        options.sort(key=lambda ch: ch.piis + sum(bound[x] for x in ch.reqs))
        for ch in options:
            self._steps -= 1
            budget.spend("realize")
            if self._steps < 0:
                return
            cost = ch.piis
            if count + cost + max((self._need[x] for x in ch.reqs if x not in assign), default=0) > max_nodes:
                continue
            if any(x in path or x == req for x in ch.reqs):
                continue
            assign[req] = ch
            path.add(req)
            for a, c in self._realize_all(list(ch.reqs), assign, path, count + cost, max_nodes, bound):
                path.discard(req)
                yield a, c
                path.add(req)
            path.discard(req)
            del assign[req]

    def _graph(self, assign: dict[Req, Choice], roots: list[Req]) -> PiiGraph | None:
        """Order the chosen nodes operands-first; None if the choice is cyclic."""
        index: dict[Req, int] = {}
        nodes: list[PiiNode] = []
        on_path: set[Req] = set()

        def visit(req: Req) -> int | None:
            if req in index:
                return index[req]
            if req in on_path:
                return None
            on_path.add(req)
            ch = assign[req]
            args = []
            for r in ch.reqs:
                a = visit(r)
                if a is None:
                    return None
                args.append(a)
            on_path.discard(req)
            c, buf = req[0], req[1]
            t = self.view.type(c)
            if ch.kind == "input":
                pn = PiiNode("input", "input", buf, t, dict(ch.node.attrs), (), c)
            elif ch.kind == "const":
                pn = PiiNode("const", "const", buf, t, {}, (), c, const_term(self._shallowest(), c))
            elif ch.kind == "undef":
                pn = PiiNode("undef", UNDEF, buf, t, {}, (), c)
            else:
                n = ch.node
                pn = PiiNode("pii", n.instr, buf, t, dict(n.attrs), tuple(args), c)
            index[req] = len(nodes)
            nodes.append(pn)
            return index[req]

        outs = []
        for r in roots:
            o = visit(r)
            if o is None:
                return None
            outs.append(o)
        if misplaced_input_views(nodes, self.hbm):
            self.misplaced += 1
            return None
        return PiiGraph(nodes, outs)


def misplaced_input_views(nodes: Sequence[PiiNode], hbm: str) -> bool:
    """Does a concat^H in HBM join views of the kernel's inputs that do not lie side by
    side, in order, in one input? Their places are fixed (the caller's storage), so no
    allocation places the concatenation (CSP2): e.g. concat(x[8:16], x[0:8]) as
    concat^H(slice^H(x), slice^H(x)), which phase 1 found first, 51 times, for that
    kernel on AMX, each refused by phase 2."""
    place: dict[int, tuple[int, int]] = {}  # node -> (input index, byte offset in it)
    for v, n in enumerate(nodes):
        if n.buffer != hbm or n.type.rank != 1:
            continue
        if n.kind == "input":
            place[v] = (n.attrs["index"], 0)
        elif n.op == "slice^H" and n.args[0] in place:
            i, at = place[n.args[0]]
            place[v] = (i, at + n.attrs["slice"][0].start)
        elif n.op == "concat^H":
            offsets = itertools.accumulate((nodes[a].type.shape[0] for a in n.args), initial=0)
            fixed = [(place[a], at) for a, at in zip(n.args, offsets) if a in place]  # (its place, its offset here)
            if len(fixed) < 2:
                continue
            (i0, p0), o0 = fixed[0]
            if any(i != i0 or p - p0 != o - o0 for (i, p), o in fixed[1:]):
                return True
            if len(fixed) == len(n.args):
                place[v] = (i0, p0 - o0)
    return False


def missing(extractor: Extractor, roots: list[ClassId]) -> tuple[str, tuple[str, ...], str, str]:
    """Why no pii graph exists: (the text, the operators of the value nothing produces, where
    it is wanted ("HBM" or a buffer), its type); the last three empty when every output can
    be produced. Follow the most promising way down — at each (class, buffer), the option
    with the most realizable operands — to the first requirement nothing can produce, and
    name it with the path that led there."""
    reqs = extractor.root_reqs(roots)
    bound = extractor.lower_bounds(reqs)
    req = next((r for r in reqs if r not in bound), None)
    if req is None:
        why = "every output can be produced, but each choice is cyclic or exceeds the node bound"
        if extractor.misplaced:
            why += (f", or concatenates views of the inputs that do not lie side by side in them"
                    f" ({extractor.misplaced} such pii graphs dropped: no allocation places them)")
        return why, (), "", ""
    path: list[str] = []
    seen: set[Req] = set()
    while req not in seen:
        seen.add(req)
        # identity instructions only rearrange what instructions made: follow real ones
        opts = [ch for ch in extractor.options(req) if ch.node is None or not ch.node.op.endswith("^H")]
        if not opts:
            break
        best = max(opts, key=lambda ch: (sum(x in bound for x in ch.reqs) - len(ch.reqs), -len(ch.reqs)))
        missing_reqs = [x for x in best.reqs if x not in bound]
        if not missing_reqs:
            break
        path.append(best.node.instr if best.node is not None else best.kind)
        req = missing_reqs[0]
    c, buf = req[0], req[1]
    nodes = extractor.view.nodes(c)
    ops = sorted({n.op for n in nodes if not n.is_pii and n.op != "copy"}) or sorted({n.op for n in nodes})
    where = "in HBM" if buf == extractor.hbm else f"in buffer {buf}"
    via = f" (needed by {' <- '.join(path)})" if path else ""
    t = str(extractor.view.type(c))
    text = f"no instruction produces {t} {where} computed by {', '.join(ops)}{via}"
    return text, tuple(ops), "HBM" if buf == extractor.hbm else buf, t
