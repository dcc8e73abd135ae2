"""Module 5 (Act §6.2): the constraint problem over the addressing attributes β
of an ordered pii graph, solved with CP-SAT (where first fit, construct.py, found
nothing; ortools is imported only then).

Every node v in buffer d gets start variables s_v (one per access dimension of
d); its extent is fixed by its type. Then
  CSP1  e_θ(α, β) and s_v = h_θ^(0)(β) for each instruction,
  CSP2  s_x = h_θ^(i)(β) for each operand x (an aliased read-modify-write operand
        thereby shares the output's address); identity instructions tie a slice to
        its operand plus the offset and a concatenation's operands side by side,
  CSP3  kernel inputs and outputs at their HBM regions (a piece's outputs apart
        from its inputs and constants, Module.output_written), constants in one
        contiguous constant section,
  CSP4  storage (owners, and slices read after the rest of their owner is dead,
        liveness.live_ranges) of the same buffer with overlapping live ranges is
        disjoint: a NoOverlap2D over (time, address) boxes for one-dimensional
        buffers, pairwise disjunctions for multi-dimensional ones.
When CP-SAT proves the problem infeasible, the groups that conflict are named
(``AllocationFailed``, ``_core``): a core over one enforcement literal per group
without CSP4, else CSP4 in one buffer at a time (a conflict with CSP4 in it blames
the order).
"""
from __future__ import annotations

from collections.abc import Sequence

from ortools.sat.python import cp_model

from .. import budget
from ..isel.extract import PiiGraph
from ..target import TargetDef
from .algebra import CpSatAlgebra
from .liveness import LiveRange, interference
from .storage import (OUTPUTS_APART, Allocation, AllocationFailed, SolveOptions, aligned, const_offsets,
                      const_section_size, extent, input_node, joined, num_inputs, scratch)

CORE_DETERMINISTIC_TIME = 1.0  # CP-SAT's deterministic seconds for naming the groups that conflict


class _Problem:
    def __init__(self, target: TargetDef, g: PiiGraph, ranges: dict[int, LiveRange], assume: bool,
                 disjoint_in: Sequence[str] | None = None) -> None:
        """``disjoint_in``: the buffers CSP4 holds in (default all)."""
        self.target, self.g, self.ranges = target, g, ranges
        self.disjoint_in = list(target.buffers) if disjoint_in is None else list(disjoint_in)
        self.m = cp_model.CpModel()
        self.alg = CpSatAlgebra(self.m)
        self.assume = assume
        self.groups: dict[tuple[str, str], cp_model.IntVar] = {}
        self.s: dict[int, list] = {}
        self.ext: dict[int, tuple[int, ...]] = {}
        self.beta: dict[int, dict[str, object]] = {}
        self.inputs: dict[int, cp_model.IntVar] = {}
        self.outputs: list = []
        self.trivially_false: list[tuple[str, str]] = []
        self._build()

    def group(self, family: str, what: str) -> list | None:
        if not self.assume:
            return None
        key = (family, what)
        if key not in self.groups:
            self.groups[key] = self.m.new_bool_var(f"{family}:{what}")
        return [self.groups[key]]

    def eq(self, a, b, family: str, what: str) -> None:  # noqa: ANN001
        if isinstance(a, int) and isinstance(b, int):
            if a != b:
                self.trivially_false.append((family, what))
                self.alg.require(False, self.group(family, what))
            return
        ct = self.m.add(a == b)
        lits = self.group(family, what)
        if lits:
            ct.only_enforce_if(lits)

    def label(self, v: int) -> str:
        n = self.g.nodes[v]
        return f"%{v} {n.op} @{n.buffer}"

    def _build(self) -> None:
        g, target = self.g, self.target
        for v, n in enumerate(g.nodes):
            buf = target.buffers[n.buffer]
            ext = extent(g, target, v)
            self.ext[v] = ext
            room = [size - e for size, e in zip(buf.access_shape, ext)]
            if min(room) < 0:
                raise AllocationFailed(f"{self.label(v)}: {n.type} does not fit in buffer {n.buffer}",
                                       [("CSP4", n.buffer)])
            self.s[v] = [self.m.new_int_var(0, r, f"s{v}_{k}") for k, r in enumerate(room)]
        for v, n in enumerate(g.nodes):
            if n.is_instruction:
                self._instruction(v)
            elif n.kind == "pii":
                self._identity(v)
        self._pins()
        self._disjoint()

    def _ties(self, v: int, bounds, family: str, what: str) -> None:  # noqa: ANN001
        starts, lengths = bounds
        for k, (st, ln) in enumerate(zip(starts, lengths)):
            self.eq(self.s[v][k], st, family, what)
            self.eq(ln, self.ext[v][k], family, what)

    def _instruction(self, v: int) -> None:
        n = self.g.nodes[v]
        ins = self.target.instructions[n.op]
        a: dict[str, object] = {d.name: n.attrs[d.name] for d in ins.comp_attrs}
        beta = {d.name: self.m.new_int_var(d.lo, d.hi, f"{d.name}{v}") for d in ins.addr_attrs}
        a.update(beta)
        self.beta[v] = beta
        what = self.label(v)
        if not self.alg.require(ins.e(a, self.alg), self.group("CSP1", what)):
            self.trivially_false.append(("CSP1", what))
        bounds = ins.h(a, self.alg)
        self._ties(v, bounds[0], "CSP1", what)
        for j, x in enumerate(n.args):
            self._ties(x, bounds[j + 1], "CSP2", f"{what} operand {ins.inputs[j].var} = %{x}")

    def _identity(self, v: int) -> None:
        n = self.g.nodes[v]
        what = self.label(v)
        m = len(self.s[v])
        if n.op == "slice^H":  # identity_ok guarantees the buffer's dtype: offsets are in its units
            (x,) = n.args
            for k in range(m):
                self.eq(self.s[v][k], self.s[x][k] + n.attrs["slice"][k].start, "CSP2", what)
            return
        (dim,) = n.attrs["dimensions"]
        off = 0
        for x in n.args:
            for k in range(m):
                self.eq(self.s[x][k], self.s[v][k] + (off if k == dim else 0), "CSP2", what)
            off += self.g.nodes[x].type.shape[dim]

    def _pins(self) -> None:
        g = self.g
        hbm = self.target.hbm.name
        for v, n in enumerate(g.nodes):
            if n.kind == "input" and n.buffer != hbm:  # on chip: at the start of its buffer
                for x in self.s[v]:
                    self.eq(x, 0, "CSP3", f"input {n.attrs['index']} on chip")
            elif n.kind == "input":
                i = n.attrs["index"]
                if i not in self.inputs:
                    self.inputs[i] = self.s[v][0]
                else:
                    self.eq(self.s[v][0], self.inputs[i], "CSP3", f"input {i}")
        self.outputs = [self.s[o][0] for o in g.outputs]
        if any(i == -1 for i, _ in g.resident):
            for o in g.outputs:
                for x in self.s[o]:
                    self.eq(x, 0, "CSP3", "output on chip")
        for k, i in g.alias.items():  # the output takes over the donated input's region
            if i not in self.inputs:  # an input the program does not read still has its region
                self.inputs[i] = self.m.new_int_var(0, self.target.hbm.access_shape[0], f"input{i}")
            self.eq(self.outputs[k], self.inputs[i], "CSP3", f"output {k} in place of input {i}")
        offsets = const_offsets(g, self.target)
        consts = list(offsets)
        if consts:
            self.const_base = self.m.new_int_var(0, self.target.hbm.access_shape[0], "const_base")
            for v, off in offsets.items():
                self.eq(self.s[v][0], self.const_base + off, "CSP3", "constant section")
            self.const_size = const_section_size(g, self.target)
        self._hints(consts)
        if g.output_written:
            self._outputs_apart(bool(consts))
        self._scratch_apart()

    def _outputs_apart(self, consts: bool) -> None:
        """A piece's HBM outputs (Module.output_written) are written into regions of their
        own, apart from the inputs (but the one an output takes over) and the constant
        section: the whole kernel's program moves a tile's or a part's output to its place
        there, away from the input it would otherwise have been a view of."""
        hbm = self.target.hbm.name
        others = [(self.const_base, self.const_size)] if consts else []
        lits = self.group(*OUTPUTS_APART)
        for k, o in enumerate(self.g.outputs):
            if self.g.nodes[o].buffer != hbm:
                continue
            regions = [(self.inputs[i], self._size_of_input(i)) for i in sorted(self.inputs)
                       if self.g.alias.get(k) != i] + others
            for start, size in regions:
                self._apart(self.s[o][0], self.ext[o][0], start, size, lits)

    def _apart(self, s, n: int, start, size: int, lits: list | None) -> None:  # noqa: ANN001
        """[s, s + n) and [start, start + size) do not overlap."""
        before, after = self.m.new_bool_var(""), self.m.new_bool_var("")
        self.m.add(s + n <= start).only_enforce_if(before)
        self.m.add(start + size <= s).only_enforce_if(after)
        ct = self.m.add_bool_or([before, after])
        if lits:
            ct.only_enforce_if(lits)

    def _scratch_apart(self) -> None:
        """HBM results that are no part of an output (scratch: a value stored to be loaded
        again) lie outside the kernel's input and output regions, also while those are not
        live yet: the program's accesses then each lie in one tensor or in scratch, which is
        what sequencing and looping programs rely on (superopt.addressing.region_of)."""
        g, hbm = self.g, self.target.hbm.name
        regions = [(self.inputs[i], self._size_of_input(i)) for i in sorted(self.inputs)]
        regions += [(self.s[o][0], self.ext[o][0]) for o in g.outputs if g.nodes[o].buffer == hbm]
        lits = self.group("CSP3", "HBM scratch apart from the kernel's tensors")
        for v in scratch(g, self.target, self.ranges):
            for start, size in regions:
                self._apart(self.s[v][0], self.ext[v][0], start, size, lits)
        lits = self.group("CSP3", "HBM concatenations within an input or apart from it")
        for v in joined(g, self.target):
            for i in sorted(self.inputs):
                self._within_or_apart(self.s[v][0], self.ext[v][0], self.inputs[i], self._size_of_input(i), lits)

    def _within_or_apart(self, s, n: int, start, size: int, lits: list | None) -> None:  # noqa: ANN001
        """[s, s + n) lies in [start, start + size) or apart from it."""
        before, after, inside = (self.m.new_bool_var("") for _ in range(3))
        self.m.add(s + n <= start).only_enforce_if(before)
        self.m.add(start + size <= s).only_enforce_if(after)
        self.m.add(start <= s).only_enforce_if(inside)
        self.m.add(s + n <= start + size).only_enforce_if(inside)
        ct = self.m.add_bool_or([before, after, inside])
        if lits:
            ct.only_enforce_if(lits)

    def _hints(self, consts: list[int]) -> None:
        """Inputs, outputs and the constant section packed from address 0, in that order."""
        at = 0
        regions = [(self.inputs[i], self._size_of_input(i)) for i in sorted(self.inputs)]
        regions += [(self.s[o][0], self.ext[o][0]) for k, o in enumerate(self.g.outputs)
                    if k not in self.g.alias and self.g.nodes[o].buffer == self.target.hbm.name]
        if consts:
            regions.append((self.const_base, self.const_size))
        hinted = set()
        for var, size in regions:
            if isinstance(var, cp_model.IntVar) and var.Index() not in hinted:  # an output may be an input
                hinted.add(var.Index())
                self.m.add_hint(var, at)
            at += aligned(size)

    def _size_of_input(self, i: int) -> int:
        return self.ext[input_node(self.g, i)][0]

    def _disjoint(self) -> None:
        by_buf: dict[str, list[int]] = {}
        for o in sorted(self.ranges):
            by_buf.setdefault(self.g.nodes[o].buffer, []).append(o)
        for name, nodes in by_buf.items():
            if name not in self.disjoint_in:
                continue
            lits = self.group("CSP4", name)
            if len(self.target.buffers[name].access_shape) == 1:
                self._no_overlap_2d(nodes, lits)
            else:
                self._pairwise(nodes, lits)

    def _no_overlap_2d(self, nodes: list[int], lits: list | None) -> None:
        xs, ys = [], []
        for v in nodes:
            r = self.ranges[v]
            s, (length,) = self.s[v][0], self.ext[v]
            if lits:
                xs.append(self.m.new_optional_fixed_size_interval_var(r.start, r.end + 1 - r.start, lits[0], ""))
                ys.append(self.m.new_optional_fixed_size_interval_var(s, length, lits[0], ""))
            else:
                xs.append(self.m.new_fixed_size_interval_var(r.start, r.end + 1 - r.start, ""))
                ys.append(self.m.new_fixed_size_interval_var(s, length, ""))
        self.m.add_no_overlap_2d(xs, ys)

    def _pairwise(self, nodes: list[int], lits: list | None) -> None:
        for i, a in enumerate(nodes):
            for b in nodes[i + 1:]:
                if not self.ranges[a].overlaps(self.ranges[b]):
                    continue
                sides = []
                for k in range(len(self.s[a])):
                    for p, q in ((a, b), (b, a)):
                        side = self.m.new_bool_var("")
                        self.m.add(self.s[p][k] + self.ext[p][k] <= self.s[q][k]).only_enforce_if(side)
                        sides.append(side)
                ct = self.m.add_bool_or(sides)
                if lits:
                    ct.only_enforce_if(lits)

    def solve(self, opts: SolveOptions) -> tuple[int, cp_model.CpSolver]:
        solver = cp_model.CpSolver()
        p = solver.parameters
        # deterministic: one worker, a fixed seed, and a limit in CP-SAT's own deterministic
        # time (the work clock's); the wall clock only as the compilation's outer cap
        p.num_workers, p.random_seed = 1, 0
        p.max_deterministic_time = opts.timeout
        p.max_time_in_seconds = max(0.01, min(opts.timeout * budget.WALL_FACTOR, budget.wall_left()))
        if self.assume:
            self.m.add_assumptions(list(self.groups.values()))
            # the core only names the conflict: it may stall long after infeasibility was
            # proved, and a deterministic limit keeps its answer (and the orders pruned
            # by it) the same on every run
            p.max_deterministic_time = CORE_DETERMINISTIC_TIME
        status = solver.solve(self.m)
        budget.spend_seconds(solver.deterministic_time)
        return status, solver


def solve(target: TargetDef, g: PiiGraph, order: list[int], ranges: dict[int, LiveRange], opts: SolveOptions,
          explain: bool = True) -> Allocation:
    """CSP1–CSP4 for one order in CP-SAT; AllocationFailed says which groups conflict (see
    allocate.allocate)."""
    prob = _Problem(target, g, ranges, assume=False)
    if prob.trivially_false:  # a constraint over α alone that fails: no β helps, in any order
        raise AllocationFailed("no allocation: " + "; ".join(f"{f} {w}" for f, w in prob.trivially_false),
                               prob.trivially_false)
    status, solver = prob.solve(opts)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return _solution(prob, solver, order)
    if status != cp_model.INFEASIBLE:
        raise AllocationFailed(f"CP-SAT found no allocation within {opts.timeout:g}s "
                               f"({solver.status_name(status)})", [], interference(g, ranges))
    core = _core(target, g, ranges, opts, explain)
    blame_order = any(f == "CSP4" for f, _ in core) or not core
    text = "; ".join(f"{f} {w}" for f, w in core) or "constraints conflict"
    raise AllocationFailed(f"no allocation: {text}", core, interference(g, ranges) if blame_order else None)


def _core(target: TargetDef, g: PiiGraph, ranges: dict[int, LiveRange], opts: SolveOptions,
          explain: bool = True) -> list[tuple[str, str]]:
    """The groups that conflict. Without CSP4 first: a conflict there is the pii graph's,
    whatever the order. Then CSP4 in one buffer at a time; a conflict that needs CSP4 in
    several is named by all of them. With ``explain``, the other groups in a conflict
    with CSP4 are named too, where CP-SAT finds them within its limit: a core over
    groups with CSP4 as optional intervals can take far longer than the proof that there
    is no allocation, so it is found once per pii graph, not for every order."""
    prob = _Problem(target, g, ranges, assume=True, disjoint_in=())
    if prob.trivially_false:
        return prob.trivially_false
    named = _named_core(prob, opts)
    if named is not None:
        return named
    shared = {g.nodes[o].buffer for o in ranges}
    overlaps = [b for b in target.buffers if b in shared]
    for b in overlaps:
        status, _ = _Problem(target, g, ranges, assume=False, disjoint_in=(b,)).solve(opts)
        if status == cp_model.INFEASIBLE:
            named = _named_core(_Problem(target, g, ranges, assume=True, disjoint_in=(b,)), opts) if explain else None
            return named or [("CSP4", b)]
    return [("CSP4", b) for b in overlaps]


def _named_core(prob: _Problem, opts: SolveOptions) -> list[tuple[str, str]] | None:
    """The groups of an infeasible ``prob`` (built with assumptions) that conflict; None
    when it is not shown infeasible within the core's limit."""
    status, solver = prob.solve(opts)
    if status != cp_model.INFEASIBLE:
        return None
    by_index = {lit.Index(): key for key, lit in prob.groups.items()}
    return [by_index[i] for i in solver.sufficient_assumptions_for_infeasibility() if i in by_index]


def _solution(prob: _Problem, solver: cp_model.CpSolver, order: list[int]) -> Allocation:
    g = prob.g
    starts = {v: tuple(solver.value(x) for x in xs) for v, xs in prob.s.items()}
    attrs = {}
    for v in order:
        n = g.nodes[v]
        ins = prob.target.instructions[n.op]
        vals = {d.name: n.attrs[d.name] for d in ins.comp_attrs}
        vals.update({k: solver.value(x) for k, x in prob.beta[v].items()})
        attrs[v] = vals
    inputs = [solver.value(prob.inputs[i]) if i in prob.inputs else -1 for i in range(num_inputs(g))]
    consts = {v: starts[v][0] for v, n in enumerate(g.nodes) if n.kind == "const"}
    return Allocation(list(order), starts, attrs, inputs, [solver.value(x) for x in prob.outputs], consts)
