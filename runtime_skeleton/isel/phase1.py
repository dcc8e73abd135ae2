"""Phase 1: instruction selection by equality saturation (Act §5).

``InstructionSelector(target, module).pii_graphs()`` initialises the e-graph
with the kernel on byte-flattened inputs and outputs (Module 1), then
interleaves rule application (Module 2: filtered IR-to-IR axioms, generated
IR-to-ISA rules, identity instructions) with extraction (Module 3) under the
node bound Γ(k) = 2^k, yielding every pii graph it finds, smallest first (§5.4).
"""
from __future__ import annotations

import bisect
import math
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from .. import budget
from ..errors import ActgenError, SourceLoc
from ..refusal import NO_PII_GRAPH, Refusal
from ..ir.graph import Module
from ..ir.dtypes import dtype
from ..ir.types import TensorType
from ..ir.widen import NARROW_INTS, narrow_pairs
from ..layout import flatten
from ..reference import evaluate
from ..target import TargetDef
from . import bflat
from .axioms import Make, dot_dims, splat
from .convert import module_to_terms
from .entry_layout import stored, windowed
from .extract import Extractor, PiiGraph, missing
from .identity import IDENTITY_RULES
from .isa_rules import Pattern, isa_rules, narrowest_stores, store_writes
from .rules import Admit, Rule, SaturationStats, run_rules
from .tensor_egraph import TensorEGraph
from .pretile import pretile
from .tiles import Tiles, instruction_dot_reads, instruction_dots, instruction_tiles, permuted_bytes, tile_split_rule
from .terms import IDENTITY_OPS, PII_PREFIX, Class, ENode, Term, View


class NoPiiGraph(ActgenError):
    """The target cannot run the kernel (within the limits): says which class and buffer failed
    (``refusal``, when phase 1 explained it)."""

    def __init__(self, message: str, loc: SourceLoc | None = None, refusal: Refusal | None = None):
        super().__init__(message, loc)
        self.refusal = refusal


Room = tuple[int | None, float | None]  # how far phase 1 may still grow: e-nodes in all, a budget.now() time


@dataclass
class Limits:
    iterations: int = 12  # saturation iterations k (the node bound is 2^k)
    max_nodes: int = 20_000  # e-nodes
    timeout: float = 20.0  # work-seconds for phase 1 (runtime_skeleton.budget)
    graphs_per_round: int = 32  # pii graphs extracted per k
    max_pii_nodes: int = 4096  # cap on Γ(k)
    expand_from: int = 6  # round k from which every rule runs, even before the first tier saturates
    # (they also join once the e-graph holds half of max_nodes: the other half is theirs)
    cheap_steps: int = 2  # iterations of the cheap rules per round until the expansive ones join: chains of
    # view rewrites (a row's slice pushed through reshapes, transposes and a broadcast to its scalar) are
    # ~10 steps deep, and AMX K3/K4 map whole with the cheap rules alone after 9
    # Tiles first: the kernel also enters the e-graph cut to its instructions' tiles (isel.pretile,
    # isel.entry_layout), and a first schedule runs every rule but the splits from round 1 (see
    # pii_graphs). None (the default): cut whenever it spans several tiles, and that schedule first
    # within LOWERING_FIRST_GROWTH times the kernel's e-nodes (Gemmini fuzz kernels need it; AMX
    # K1's program is found at 0.5k e-nodes by the cheap rules alone and in none of 10k with the
    # lowering rules); True: cut, and that schedule to half the node limit; False: neither.
    tiles_first: bool | None = None
    exact_only: bool = False  # only rules exact bit for bit (the kernel reads float bits: reads_float_bits)
    isa_closure: int = 4  # after each round with the expansive rules, iterations of only the IR-to-ISA and
    # identity rules: an instruction whose operand is a view in its own layout (a tile) gets the instructions
    # producing that operand in the same round, not one round later each


@dataclass
class Phase1Stats:
    saturation: SaturationStats = field(default_factory=SaturationStats)
    extraction_seconds: float = 0.0
    rounds: int = 0


def target_ops(patterns: list[Pattern]) -> set[str]:
    """Operators the instructions' semantics use (what Appendix C.2 filters for)."""
    return set().union(*(p.ops for p in patterns)) if patterns else set()


def signature_filter(patterns: list[Pattern]) -> Admit:
    """Act Appendix C.2 keeps a rule when its operators can lead to an instruction's; this
    refines it by dtype, per result: a dot that a rule builds (an identity matmul, a
    reduction or a broadcast as a matmul) with dtypes no instruction's dot has can never
    become an instruction, so it is not added. A dot keeps its (lhs, rhs, result) dtypes
    under every axiom (splits, transposes, commutation) except the outer product, which
    needs a contraction of size 1 and turns it into a multiply (but for a dot by the constant
    1, the identity rules' eye(1) on a column: x * 1 is x again). (Not so for copies: a
    pattern's copy matches modulo views, so a copy of bytes can be an instruction's copy of
    words.) Dropping rewrites cannot make phase 1 unsound."""
    sigs = instruction_dots(patterns, converted=True)

    def admit(view: View, t: Term | Class) -> bool:
        # iterative, each shared subterm once: a rule's result can be hundreds of levels deep
        ty = Make(view).type
        stack, seen = [t], set()
        while stack:
            x = stack.pop()
            if isinstance(x, Class) or id(x) in seen:
                continue
            seen.add(id(x))
            if x.op == "dot":
                a, b = x.args
                if (ty(a).dtype.name, ty(b).dtype.name, x.type.dtype.name) not in sigs and \
                        (math.prod(ty(a).shape[d] for d in dot_dims(x)[1]) != 1  # type: ignore[arg-type]
                         or _unit_one(a) or _unit_one(b)):
                    return False
            stack.extend(x.args)
        return True

    return admit


def _unit_one(t: Term | Class) -> bool:
    """Whether ``t`` is the constant 1 of one element (the identity matmul rules' eye(1)): a
    dot by it that no instruction computes only becomes, as an outer product, x * 1 = x."""
    if not isinstance(t, Term) or t.op != "constant":
        return False
    arr = t.attrs["literal"].array
    return arr.size == 1 and arr.item() == 1


def _materialize_constants() -> Rule:
    from .rules import rule

    @rule("const-bflat", {"constant", "iota", "broadcast"}, {"reshape", "bitcast-convert", "convert"})
    def const_bflat(view, c, n: ENode):  # noqa: ANN001, ANN202
        """c = unflatten(flatten(c)) for literal constants and broadcast scalar constants
        (a slice of a splat is one), so a load can read them from d0."""
        if n.type.rank == 0 or 0 in n.type.shape or (n.op == "broadcast" and splat(view, c) is None):
            return
        yield bflat.unflatten(bflat.flatten(Class(c), n.type), n.type)

    return const_bflat


def hbm_round_trip(views: bool = False) -> Rule:
    """The round-trip rule; ``views``: also for values that only move the inputs (the rule
    before 2026-11-27, whose e-graphs hold other pii graphs: tests build them with it)."""
    from .rules import ANY, rule

    @rule("hbm-round-trip", {ANY}, {"reshape", "bitcast-convert"}, expansive=True)
    def round_trip(view, c, n: ENode):  # noqa: ANN001, ANN202
        """x = unflatten(flatten(x)): a value may be stored to HBM and loaded back
        (how a result reaches an instruction that reads it only from HBM). Not a value that
        only moves the inputs: on slice_concat those round trips were 1.6k of the e-graph's
        first 20k e-nodes, and the whole kernel had no pii graph at 150k (now at 80k)."""
        t = n.type
        if t.rank == 0 or (t.rank == 1 and t.dtype.name == "u8") or n.op in ("input", "constant", "iota") or \
                0 in t.shape:  # an empty slice has no bytes to store
            return
        if not views and c in view.moved_inputs():
            return  # the inputs' bytes are in HBM already: a round trip only copies them
        yield bflat.unflatten(bflat.flatten(Class(c), t), t)

    return round_trip


EXPANSIVE_MARKS = ("-split", "-as-dot", "dot-identity")


def is_expansive(r: Rule) -> bool:
    """Rules that grow the e-graph by a factor (splits, identity matmuls, round trips)."""
    return r.expansive or any(m in r.name for m in EXPANSIVE_MARKS)


SPLITS = ("concat-binarize", "concat-merge-slices")
# By default the lowering-first schedule (pii_graphs) may grow the e-graph to this many times
# the kernel as written (before its tiles join) before the cheap-first one takes over, unless
# Γ(k) alone is short: the Gemmini fuzz kernels it maps (seeds 90017-90056) had their first pii
# graph within 53 times the kernel cut to its tiles; AMX kernels, which need no lowering, grew
# past 10k e-nodes with none (K1 entered as 40). Counted on the kernel as written, a kernel its
# tiles multiply (JAX's row sums of s8[16,32] on Gemmini: 9 e-nodes, 268 cut to its tiles) gives
# way at 2048 e-nodes, not 17k: its first pii graph in 1.2 s, not 5.
LOWERING_FIRST_GROWTH = 64
# ... and at least to this many e-nodes: a kernel of a few nodes needs a few lowering steps all
# the same (a byte negate widened to s32 on AMX, 8 e-nodes as it entered: its pii graph at 703
# e-nodes in 0.2 s, where the cheap-first schedule took 3 s)
LOWERING_FIRST_FLOOR = 2048


def is_split(r: Rule) -> bool:
    """The halving splits and the concatenation rewrites that serve them: they cut every
    tensor at every power of two, which a kernel already cut to its tiles (``pretile``,
    ``instruction-tiling``) needs only where a tile is not an instruction's."""
    return "-split" in r.name or r.name in SPLITS


@dataclass(frozen=True)
class TargetFacts:
    """What phase 1 derives from a target's description, built once per target (a few
    hundred ms: every instruction's semantics compiled to a pattern); read-only."""
    rules: list[Rule]
    patterns: list[Pattern]
    tiles: Tiles  # the sizes instructions compute each (operator, dtype) at
    dots: frozenset[tuple[str, str, str]]  # the (lhs, rhs, result) dtypes instructions' dots read
    ops: frozenset[str]  # the operators the instructions' semantics use
    narrowest_stores: dict[int, int]  # element width -> the fewest row bytes a store to HBM writes
    narrow_arithmetic: frozenset[tuple[str, str]]  # (operator, narrow int type) pairs ir.widen computes in s32
    widened_reverses: frozenset[str]  # narrow int types whose lane reverses ir.widen computes in s32


_FACTS: dict[int, tuple[TargetDef, TargetFacts]] = {}


def reads_float_bits(module: Module) -> bool:
    """Whether the kernel reinterprets float bits (a bitcast-convert from a float type to
    another): a rule equal only up to float rounding (``Rule.exact`` False; the sign of a
    zero sum, for one) would then change integer results, and only exact rules run."""
    comp = module.entry_computation
    return any(i.opcode == "bitcast-convert" and isinstance(i.type, TensorType)
               and comp[i.operands[0]].tensor_type.dtype.is_float and comp[i.operands[0]].tensor_type.dtype != i.type.dtype
               for i in comp.instructions)


def target_facts(target: TargetDef) -> TargetFacts:
    got = _FACTS.get(id(target))
    if got is None or got[0] is not target:
        got = _FACTS[id(target)] = (target, _facts(target))
    return got[1]


def default_rules(target: TargetDef) -> tuple[list[Rule], list[Pattern]]:
    f = target_facts(target)
    return f.rules, f.patterns


def _facts(target: TargetDef) -> TargetFacts:
    from .axioms import rules_for_ops

    isa, patterns = isa_rules(target)
    ops = target_ops(patterns)
    tiles, dots = instruction_tiles(patterns), instruction_dots(patterns)
    narrowest = narrowest_stores(target, patterns)
    rules = lane_rules(rules_for_ops(ops), narrowest, permuted_bytes(tiles, dots)) + [tile_split_rule(tiles, dots)] + \
        IDENTITY_RULES + [_materialize_constants(), hbm_round_trip()] + isa
    computed = {(n.op, n.dtype) for p in patterns for n in p.nodes}
    return TargetFacts(rules, patterns, tiles, dots, frozenset(ops), narrowest, narrow_pairs(computed),
                       _widened_reverses(ops, narrowest))


def _widened_reverses(ops: set[str], narrowest: dict[int, int]) -> frozenset[str]:
    """The narrow integer types whose single elements no store to HBM writes, on a target
    that reverses by moves (no instruction reverses) and stores single s32 elements (AMX:
    a byte lane reverse is a loop of word moves in s32, ``ir.widen.reverses_widened``)."""
    word = dtype("s32").nbytes
    if "reverse" in ops or not store_writes(narrowest, word, word):
        return frozenset()
    return frozenset(dt for dt in NARROW_INTS if not store_writes(narrowest, dtype(dt).nbytes, dtype(dt).nbytes))


LANE_RULES = frozenset({"reverse-as-byte-dot"})  # lane permutations computed, not moved


def lane_rules(rules: list[Rule], narrowest: dict[int, int], permuted: int | None) -> list[Rule]:
    """``rules`` with a copy of each of LANE_RULES (expansive in general) among the cheap rules
    at the 1- and 2-D types whose single elements no store to HBM writes (``narrowest``: Gemmini
    stores rows of 16 lanes) and whose rows one int8 dot permutes whole (``permuted`` bytes):
    there they are the only way to permute lanes, and pretile cuts such reverses to those
    blocks. The copy is named ``<rule>:lanes``."""
    def cheap_here(t: TensorType) -> bool:
        width = t.dtype.nbytes
        return t.rank in (1, 2) and not store_writes(narrowest, width, width) and t.shape[-1] * width <= (permuted or 0)

    out = []
    for r in rules:
        if r.name in LANE_RULES and permuted:
            out.append(replace(r, name=f"{r.name}:lanes", expansive=False, accepts=cheap_here))
        out.append(r)
    return out


class InstructionSelector:
    def __init__(self, target: TargetDef, module: Module, limits: Limits | None = None,
                 rules: list[Rule] | None = None):
        self.target, self.module = target, module
        self.limits = limits or Limits()
        facts = target_facts(target)
        self.rules = rules if rules is not None else facts.rules
        if rules is None and (self.limits.exact_only or reads_float_bits(module)):  # then "equal up to rounding" is not
            self.rules = [r for r in self.rules if r.exact]
        self.admit = signature_filter(facts.patterns)
        self.stats = Phase1Stats()
        self.timed_out = False  # the enumeration ended at Limits.timeout
        self.input_types: list[TensorType] = [t for t in module.parameter_types]  # type: ignore[misc]
        for t in self.input_types:
            if not isinstance(t, TensorType):
                raise NoPiiGraph("kernels with tuple-typed parameters are not supported")
        args = [self._input(i, t) for i, t in enumerate(self.input_types)]
        outs = module_to_terms(module, args=args)
        self.output_types = [_layout_of(module, i, o.type) for i, o in enumerate(outs)]
        out_buf = module.resident_in(-1)
        self.output_buffers = [out_buf or target.hbm.name for _ in outs]
        def placed(values: list[Term]) -> list[Term]:  # the outputs as the kernel leaves them
            return [self._on_chip(o, t, out_buf) if out_buf else bflat.flatten(o, t)
                    for o, t in zip(values, self.output_types)]

        self._roots = placed(outs)
        exact = all(r.exact for r in self.rules)
        tiled = (pretile(outs, facts.tiles, facts.dots, facts.ops, exact, facts.narrowest_stores)
                 if self.limits.tiles_first is not False else None)
        tiled = None if tiled is None else windowed(tiled)
        # per root: the tiled kernel, and the bytes of an HBM output as its tiles' stores write them
        self._tiled: list[list[Term]] = [] if tiled is None else [
            [p] + ([b] if not out_buf and (b := stored(x, t)) is not None else [])
            for p, x, t in zip(placed(tiled), tiled, self.output_types)]
        self._seed()
        self.written = (tuple(True for _ in outs) if module.output_written
                        else () if out_buf else _not_views(module, self.input_types, self.output_types))
        self._extractor: Extractor | None = None  # the last round's: the e-graph has not changed since

    def _seed(self) -> None:
        """A new e-graph holding the kernel as written and, in the same classes, cut to its tiles."""
        self.eg = TensorEGraph()
        self._root_refs = [self.eg.add(r) for r in self._roots]
        self.eg.flush()
        self.kernel_nodes = self.eg.view.node_count()  # the kernel as written, before its tiles join
        for ref, forms in zip(self._root_refs, self._tiled):
            for t in forms:
                self.eg.union(self.eg.class_of(ref), t)
        if self._tiled:
            self.eg.flush()

    def _input(self, i: int, t: TensorType) -> Term:
        """Kernel input i: its bytes on d0, or (Module.resident) the value kept on chip,
        as the buffer holds it (``bflat.resident_type``)."""
        buf = self.module.resident_in(i)
        if not buf:
            return bflat.unflatten(Term("input", bflat.flat_type(t), (), {"index": i}), t)
        held = self._resident_type(buf, t)
        return bflat.fold(Term("input", held, (), {"index": i, "buffer": buf}), bflat.reinterpret_steps(held, t),
                          bflat.term, bflat.zero_term)

    def _on_chip(self, out: Term, t: TensorType, buf: str) -> Term:
        return bflat.fold(out, bflat.reinterpret_steps(t, self._resident_type(buf, t)), bflat.term, bflat.zero_term)

    def _resident_type(self, buf: str, t: TensorType) -> TensorType:
        try:
            return bflat.resident_type(self.target.buffers[buf], t)
        except ActgenError as err:
            raise NoPiiGraph(err.message) from None

    @property
    def roots(self) -> list:
        return [self.eg.class_of(r) for r in self._root_refs]

    def pii_graphs(self, stop: Callable[[int], bool] | None = None,
                   room: Callable[[], Room] | None = None) -> Iterator[PiiGraph]:
        """Every pii graph, in rounds k = 1, 2, ...: saturate one more step, then
        extract with at most Γ(k) = 2^k piis; within a round smallest first.
        ``stop(k)``, asked before each round, ends the enumeration early; ``room()``,
        asked before each saturation step, bounds it (e-nodes in all, or a time): the
        compiler's patience, which a whole round could otherwise overshoot severalfold.

        Two schedules, both ending with every rule: first everything but the splits from
        round 1 (the kernel entered cut to its tiles, so the lowering rules, identity and
        negation matmuls among them, reach instructions at once); if that e-graph passes
        its budget with no pii graph (``Limits.tiles_first``: by default LOWERING_FIRST_GROWTH
        times the kernel's e-nodes as written, with True half the node limit) while some output
        cannot be produced yet (not only Γ(k) short), a new e-graph runs the
        cheap rules first and the expansive ones later (a view-heavy kernel, a pad, drowns
        in lowering rules). ``Limits.tiles_first`` False: only the second."""
        deadline = budget.after(self.limits.timeout)
        seen: set[tuple] = set()
        cheap_first = [r for r in self.rules if not is_expansive(r)]
        if self.limits.tiles_first is False or (self.limits.tiles_first is None and _matmuls_only(
                self.module, target_facts(self.target).dots)):
            yield from self._rounds(cheap_first, seen, deadline, stop, None, room)
            return
        lowering_first = [r for r in self.rules if not is_split(r)]
        growth = self.limits.max_nodes // 2
        if self.limits.tiles_first is None:
            growth = min(growth, max(LOWERING_FIRST_FLOOR, LOWERING_FIRST_GROWTH * self.kernel_nodes))
        again = yield from self._rounds(lowering_first, seen, deadline, stop, growth, room)
        if again and budget.now() < deadline:
            self._seed()
            self.stats.saturation.nodes, self.stats.saturation.saturated = 0, False
            yield from self._rounds(cheap_first, seen, deadline, stop, None, room)

    def _rounds(self, cheap: list[Rule], seen: set[tuple], deadline: float, stop: Callable[[int], bool] | None,
                abandon_at: int | None, room: Callable[[], Room] | None = None) -> Generator[PiiGraph, None, bool]:
        """The rounds of one schedule (``cheap`` first, then every rule); True when it found
        no pii graph (it was abandoned at ``abandon_at`` e-nodes, or ran out of rounds or
        nodes) and did not prove that there is none."""
        lim = self.limits
        # the lowering-first schedule (and with tiles_first both) holds an e-graph only while Γ(k) is too small
        eager = abandon_at is not None or lim.tiles_first is True
        saturated = capped = False
        selection = [r for r in self.rules if r.name.startswith(PII_PREFIX) or r.name in IDENTITY_OPS]
        expanded = frozen = selected = hold = False
        self._extractor = None
        for k in range(1, lim.iterations + 1):
            if stop is not None and stop(k):
                break
            # The rules held back from the first tier (``cheap``) join once it saturates (in that
            # same round), at round expand_from, or at half the node limit.
            # (a held e-graph stays as it is, unless it saturated before the splits joined)
            for _ in range(0 if frozen or (hold and (expanded or not saturated or not eager)) else 2):
                half_full = 2 * self.stats.saturation.nodes >= lim.max_nodes
                if not expanded and (saturated or k >= lim.expand_from or half_full):
                    expanded, saturated = True, False
                if saturated:
                    break
                self.stats.saturation.saturated = False
                cap, until = room() if room is not None else (None, None)
                if abandon_at is not None and not seen:  # not far past it: the check is at the round's end
                    cap = 2 * abandon_at if cap is None else min(cap, 2 * abandon_at)
                run_rules(self.eg, self.rules if expanded else cheap, iterations=1 if expanded else lim.cheap_steps,
                          max_nodes=lim.max_nodes, deadline=min(deadline, until or deadline),
                          stats=self.stats.saturation, admit=self.admit, work_cap=cap)
                saturated, capped = self.stats.saturation.saturated, self.stats.saturation.capped
                if expanded or not saturated:
                    break
            if expanded and not saturated and not selected and not hold and lim.isa_closure:
                # only pii and identity nodes: past the node limit too (frozen), until they saturate
                run_rules(self.eg, selection, iterations=lim.isa_closure, max_nodes=2**62,
                          deadline=deadline, stats=self.stats.saturation, admit=self.admit)
                selected = frozen and self.stats.saturation.saturated
                self.stats.saturation.saturated = saturated
            t0 = time.perf_counter()
            ex = self._extractor
            if ex is None or ex.view is not self.eg.view:
                # an unchanged e-graph (Γ grown, the e-graph held) keeps its extractor and with it the
                # lower bounds, which on AMX gemm_f32's 128k e-nodes took 27 s a round
                ex = self._extractor = self._new_extractor(deadline)
            graphs = ex.enumerate(self.roots, min(2**k, lim.max_pii_nodes), lim.graphs_per_round)
            self.stats.extraction_seconds += time.perf_counter() - t0
            self.stats.rounds = k
            for g in graphs:
                if g.key() not in seen:
                    seen.add(g.key())
                    if self.module.output_alias is not None:
                        g.alias = {0: self.module.output_alias}
                    g.resident = self.module.resident
                    g.output_written = self.module.output_written
                    yield g
            if budget.now() > deadline:
                self.timed_out = True
                break
            realizable = bool(seen) or ex.realizable(self.roots)
            # Γ(k) too small: every output can be produced, by more piis than Γ(k) allows
            short = not seen and realizable and eager and self._tree_size(ex) > 2**k
            # not abandoned then: the rounds below grow Γ on this e-graph as it is (AMX fuzz
            # 108001's row of ten byte operators: a 25-instruction pii graph in it at 2.8k
            # e-nodes, 0.4 s; abandoned there at round 4, Γ = 16, the next schedule took 5.7 s)
            if abandon_at is not None and not seen and not short and \
                    (self.stats.saturation.nodes > abandon_at or capped):
                return True
            # Every output can be produced, but no pii graph fits Γ(k) yet (a large kernel
            # needs Γ(k) >= its size): grow Γ before the e-graph, which only grows the search.
            # Not when the smallest tree of piis fits Γ(k) already: then Γ is not what kept the
            # graphs out (extraction dropped them, e.g. input views no allocation places).
            hold = not seen and 2**k < lim.max_pii_nodes and realizable and (not eager or short)
            # Past the node limit the e-graph stops growing, but Γ(k) still grows: larger
            # pii graphs of this e-graph are still enumerated, until the deadline.
            stopped = saturated or (frozen and selected)  # this e-graph is final
            frozen = frozen or self.stats.saturation.nodes > lim.max_nodes
            if (saturated or frozen) and expanded and 2**k >= lim.max_pii_nodes:
                break
            # A final e-graph with an output no choice of piis produces has no pii graph at
            # any Γ(k): stop now (saturated, that proves the rules cannot reach one).
            if expanded and stopped and not realizable:
                return False
        return not seen and not self.timed_out

    def _tree_size(self, ex: Extractor) -> int:
        """The fewest piis that produce every output as trees (nothing shared)."""
        reqs = ex.root_reqs(self.roots)
        bound = ex.lower_bounds(reqs)
        return sum(bound.get(r, 2**62) for r in reqs)

    def _new_extractor(self, deadline: float | None = None) -> Extractor:
        return Extractor(self.target, self.eg.view, self.output_buffers, deadline=deadline, written=self.written,
                         alias_input=self.module.output_alias, apart=self.module.output_written)

    def first(self) -> PiiGraph:
        for g in self.pii_graphs():
            return g
        text, refusal = self.explained()
        raise NoPiiGraph(text, refusal=refusal)

    def explain(self) -> str:
        return self.explained()[0]

    def explained(self) -> tuple[str, Refusal]:
        """Why there is no pii graph: the text, and the same as data."""
        # the enumeration ends right after a round's extraction, so its bounds are reused
        # (computing them again on a large e-graph took seconds past the time limit)
        ex = self._extractor or self._new_extractor()
        why, ops, where, t = missing(ex, self.roots)
        st, lim = self.stats.saturation, self.limits
        limited = not st.saturated or ex.truncated
        refusal = Refusal(NO_PII_GRAPH, ops, where, t, limited)
        if not st.saturated and st.nodes > lim.max_nodes:
            why += (f" (the e-graph reached its limit of {lim.max_nodes} e-nodes before saturating: the kernel"
                    f" may need more rewriting than the limits allow; raise Limits.max_nodes and the timeout)")
        elif not st.saturated and self.stats.rounds >= lim.iterations and not self.timed_out:
            why += (f" (phase 1 stopped after its {lim.iterations} rounds before the e-graph saturated;"
                    f" raise Limits.iterations)")
        elif not st.saturated:
            why += f" (phase 1 stopped at its {lim.timeout:g} s limit before the e-graph saturated)"
        if ex.truncated:
            why += (" (extraction explored only part of the e-graph's (class, buffer) requirements before its"
                    " time or size limit)")
        return f"no pii graph for {self.target.name}: " + why, refusal


# views and wiring: what the lowering rules leave as it is
_VIEWS = frozenset({"parameter", "constant", "iota", "reshape", "bitcast-convert", "copy", "transpose", "slice",
                    "concatenate", "convert", "tuple", "get-tuple-element"})


def _matmuls_only(module: Module, dots: frozenset[tuple[str, str, str]]) -> bool:
    """Whether the kernel computes nothing but dots that an instruction's dot computes in
    their operand types (an operand's type before a convert included: AMX's K1 reads
    convert(u8) and convert(s8)), besides views: then the lowering rules (negations,
    broadcasts, additions as matmuls) have nothing to lower, and phase 1 starts with the
    cheap rules (Gemmini's additions are cheaper as matmuls: a kernel with one keeps them)."""
    comp = module.entry_computation
    found = False
    for i in comp.instructions:
        if i.opcode == "dot":
            if not instruction_dot_reads(comp, i, dots):
                return False
            found = True
        elif i.opcode not in _VIEWS:
            return False
    return found


def _not_views(module: Module, inputs: list[TensorType], outputs: list[TensorType]) -> tuple[bool, ...]:
    """Outputs that no pii graph may leave as a view of an input's storage: on random
    bytes their bytes are no contiguous run of any input's. A whole kernel's output can
    be such a view (a slice of rows: no instruction at all), but one that is not (two
    rows swapped) must be written; extraction then skips the view graphs, cheapest
    first, that no allocation places (CSP2). An evaluation error counts as a view."""
    rng = np.random.default_rng(0)
    args = [flatten.unbflat(rng.integers(0, 256, flatten.byte_size(t), np.uint8).tobytes(), t) for t in inputs]
    try:
        with np.errstate(all="ignore"):
            results = evaluate(module, args)
    except (ActgenError, ArithmeticError, ValueError):
        return tuple(False for _ in outputs)
    held = [flatten.bflat(a, t) for a, t in zip(args, inputs)]
    # an output that is a whole input is one lookup, and only longer inputs are searched (the
    # 5000 one-element outputs of a tuple of its parameters were 25M searches)
    whole = set(held)
    by_length = sorted(held, key=len)
    lengths = [len(h) for h in by_length]

    def viewed(r: bytes) -> bool:
        return r in whole or any(r in h for h in by_length[bisect.bisect_right(lengths, len(r)):])

    return tuple(len(r := flatten.bflat(v, t)) > 0 and not viewed(r) for v, t in zip(results, outputs))


def _layout_of(module: Module, i: int, t: TensorType) -> TensorType:
    """The layout of output i as the module declares it (entry root or tuple element)."""
    root = module.entry_computation.root_instruction.type
    if isinstance(root, TensorType):
        return root if root.layout is not None else t
    leaf = root.elements[i]
    return leaf if isinstance(leaf, TensorType) and leaf.layout is not None else t
