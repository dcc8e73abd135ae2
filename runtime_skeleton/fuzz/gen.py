"""Random well-typed HLO kernels over Act's ten fuzzing operators (Act §9.4, App. D).

One generator, two sources of randomness: ``random_kernel(target, seed)`` draws from
``random.Random(seed)`` (deterministic, no hypothesis needed) and ``kernels(target)``
is a hypothesis strategy drawing the same choices with ``st.integers`` (so hypothesis
can shrink a failing kernel). Both go through ``Draw.integer(lo, hi)``.

The kernel is built top-down and type-directed: the ROOT's type is drawn first, and
each value of a wanted type (dtype, shape) is a leaf (a new parameter, a broadcast
constant, or a value of that type made earlier, which makes the graph a DAG) or one
of the ten operators whose operands are wanted in turn:

    dot broadcast reduce reverse add subtract negate minimum maximum clamp

(plus parameter and constant; reduce sums with a to_apply computation). As in Act
App. D the graph has several outputs and they are joined by add into one ROOT (also
when ``ops`` restricts the operators to a subset without add), so
the node count (instructions of the entry computation) is #operators + #parameters +
#constants + (#outputs - 1). It is drawn uniformly in [min_nodes, max_nodes] and
met exactly: every value is made within a node budget and further outputs are
joined until the budget is spent.
"""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol

from ..target import TargetDef
from .profile import Profile, profile

OPS = ("dot", "broadcast", "reduce", "reverse", "add", "subtract", "negate", "minimum", "maximum", "clamp")
BINARY = ("add", "subtract", "minimum", "maximum")
MIN_NODES, MAX_NODES = 7, 90

Shape = tuple[int, ...]


class Draw(Protocol):
    def integer(self, lo: int, hi: int) -> int:
        """A uniformly drawn integer in [lo, hi] (lo <= hi)."""
        ...


class RandomDraw:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


class HypothesisDraw:
    def __init__(self, draw):  # noqa: ANN001 - hypothesis' draw function
        from hypothesis import strategies as st

        self._draw, self._st = draw, st

    def integer(self, lo: int, hi: int) -> int:
        return lo if lo == hi else self._draw(self._st.integers(lo, hi))


@dataclass
class FuzzKernel:
    text: str
    nodes: int  # instructions of the entry computation
    ops: Counter = field(default_factory=Counter)  # opcode -> count in the entry computation
    parameters: int = 0
    outputs: int = 1


@dataclass(frozen=True)
class _Value:
    name: str
    dtype: str
    shape: Shape


def _type(dtype: str, shape: Shape, layout: bool = True) -> str:
    t = f"{dtype}[{','.join(map(str, shape))}]"
    if layout and shape:
        t += "{" + ",".join(str(d) for d in reversed(range(len(shape)))) + "}"
    return t


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("f", "bf"))


_FLOATS = (-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0)  # exact in every float type


class _Builder:
    def __init__(self, prof: Profile, d: Draw, ops: tuple[str, ...] = OPS):
        self.p, self.d, self.allowed = prof, d, frozenset(ops)
        self.lines: list[str] = []
        self.count = 0
        self.params: list[_Value] = []
        self.pool: dict[tuple[str, Shape], list[_Value]] = {}
        self.reducers: list[str] = []  # dtypes that need an add computation
        self.ops: Counter = Counter()

    # ---------------------------------------------------------------- draws
    def choice(self, seq):  # noqa: ANN001, ANN201
        return seq[self.d.integer(0, len(seq) - 1)]

    def dim(self) -> int:
        """A tile-friendly extent; the smallest (one tile) is drawn len(dims) times as often as each other."""
        dims = self.p.dims
        k = self.d.integer(0, 2 * len(dims) - 2)
        return dims[0] if k < len(dims) else dims[k - len(dims) + 1]

    def chance(self, percent: int) -> bool:
        return self.d.integer(0, 99) < percent

    def weighted(self, options: list[tuple[int, str]]) -> str:
        k = self.d.integer(0, sum(w for w, _ in options) - 1)
        for w, o in options:
            if k < w:
                return o
            k -= w
        raise AssertionError("unreachable")

    # ---------------------------------------------------------------- emitting
    def emit(self, op: str, dtype: str, shape: Shape, rhs: str, pool: bool = True) -> _Value:
        base = {"parameter": "Arg", "constant": "constant"}.get(op, op)
        v = _Value(f"{base}.{self.count}", dtype, shape)
        self.count += 1
        self.ops[op] += 1
        self.lines.append(f"  {v.name} = {_type(dtype, shape)} {rhs}")
        if pool and shape:
            self.pool.setdefault((dtype, shape), []).append(v)
        return v

    def parameter(self, dtype: str, shape: Shape) -> _Value:
        v = self.emit("parameter", dtype, shape, f"parameter({len(self.params)})")
        self.params.append(v)
        return v

    def scalar(self, dtype: str, value: float | int) -> _Value:
        text = f"{value:g}" if _is_float(dtype) else str(int(value))
        return self.emit("constant", dtype, (), f"constant({text})", pool=False)

    def small_value(self, dtype: str) -> float | int:
        if _is_float(dtype):
            return self.choice(_FLOATS)
        return self.d.integer(0, 3) if dtype.startswith("u") else self.d.integer(-3, 3)

    def bounds(self, dtype: str) -> tuple[float | int, float | int]:
        if _is_float(dtype):
            return self.choice(_FLOATS[:5]), self.choice(_FLOATS[4:])
        if dtype.startswith("u"):
            return self.d.integer(0, 5), self.d.integer(5, 30)
        span = 100 if dtype.endswith("32") or dtype.endswith("64") else 20
        return self.d.integer(-span, 0), self.d.integer(0, span)

    # ---------------------------------------------------------------- generation
    def fits(self, shape: Shape) -> bool:
        n = 1
        for s in shape:
            n *= s
        return len(shape) <= 3 and n <= self.p.max_elements

    def value(self, dtype: str, shape: Shape, budget: int) -> _Value:
        """A value of the type, made with at most ``budget`` (>= 1) new nodes."""
        made = self.pool.get((dtype, shape))
        if made and self.chance(20):
            return self.choice(made)
        options = self.options(dtype, shape, budget)
        if not options or self.chance(8):
            return self.leaf(dtype, shape, budget)
        return self.operator(self.weighted(options), dtype, shape, budget)

    def leaf(self, dtype: str, shape: Shape, budget: int) -> _Value:
        if budget >= 2 and self.params and "broadcast" in self.allowed and self.chance(12):  # one input at least
            c = self.scalar(dtype, self.small_value(dtype))
            return self.emit("broadcast", dtype, shape, f"broadcast({c.name}), dimensions={{}}")
        return self.parameter(dtype, shape)

    def options(self, dtype: str, shape: Shape, budget: int) -> list[tuple[int, str]]:
        opts: list[tuple[int, str]] = []
        if budget >= 2:
            opts += [(3, "negate"), (3, "reverse")]
            if len(shape) >= 2:
                opts.append((3, "broadcast"))
        if budget >= 3:
            opts += [(4, op) for op in BINARY]
            if len(shape) <= 2 and any(self.fits(shape + (k,)) for k in self.p.dims):
                opts.append((3, "reduce"))
            if len(shape) == 2 and self.dot_bases(dtype):
                opts.append((8, "dot"))
        if budget >= 4:
            opts.append((3, "clamp"))
        return [(w, o) for w, o in opts if o in self.allowed and (o == "dot" or self.p.can(o, dtype))]

    def dot_bases(self, dtype: str) -> list[str]:
        return [b for b in self.p.dtypes if self.p.acc(b) == dtype and self.p.can("dot", b)]

    def split(self, budget: int) -> int:
        """Budget for the first of two operands; the second gets what it leaves."""
        return self.d.integer(1, budget - 1)

    def operator(self, op: str, dtype: str, shape: Shape, budget: int) -> _Value:
        start = self.count
        if op in ("negate", "reverse"):
            x = self.value(dtype, shape, budget - 1)
            if op == "negate":
                return self.emit(op, dtype, shape, f"negate({x.name})")
            mask = self.d.integer(1, 2 ** len(shape) - 1)
            dims = ",".join(str(i) for i in range(len(shape)) if mask >> i & 1)
            return self.emit(op, dtype, shape, f"reverse({x.name}), dimensions={{{dims}}}")
        if op in BINARY:
            a = self.value(dtype, shape, self.split(budget - 1))
            b = self.value(dtype, shape, budget - 1 - (self.count - start))
            return self.emit(op, dtype, shape, f"{op}({a.name}, {b.name})")
        if op == "clamp":
            lo, hi = self.bounds(dtype)
            x = self.value(dtype, shape, budget - 3)
            clo, chi = self.scalar(dtype, lo), self.scalar(dtype, hi)
            return self.emit(op, dtype, shape, f"clamp({clo.name}, {x.name}, {chi.name})")
        if op == "broadcast":  # a probed profile draws what its probe tried: repeating the minor dimensions
            drop = 0 if self.p.probed else self.d.integer(0, len(shape) - 1)
            src = shape[:drop] + shape[drop + 1:]
            x = self.value(dtype, src, budget - 1)
            dims = ",".join(str(i) for i in range(len(shape)) if i != drop)
            return self.emit(op, dtype, shape, f"broadcast({x.name}), dimensions={{{dims}}}")
        if op == "reduce":
            pos = self.d.integer(0, len(shape))
            size = self.dim()
            if not self.fits(shape[:pos] + (size,) + shape[pos:]):
                size = self.p.dims[0]
            x = self.value(dtype, shape[:pos] + (size,) + shape[pos:], budget - 2)
            init = self.scalar(dtype, 0)
            if dtype not in self.reducers:
                self.reducers.append(dtype)
            return self.emit(op, dtype, shape,
                             f"reduce({x.name}, {init.name}), dimensions={{{pos}}}, to_apply=add_{dtype}")
        if op == "dot":
            base = self.choice(self.dot_bases(dtype))
            (m, n), k = shape, self.dim()
            probed = self.p.probed  # draws what the probe tried: no transposed operands
            variant = "mk" if probed else self.weighted([(7, "mk"), (1, "km")])
            lhs_shape, lc = ((m, k), 1) if variant == "mk" else ((k, m), 0)
            variant = "kn" if probed else self.weighted([(7, "kn"), (1, "nk")])
            rhs_shape, rc = ((k, n), 0) if variant == "kn" else ((n, k), 1)
            a = self.value(base, lhs_shape, self.split(budget - 1))
            b = self.value(base, rhs_shape, budget - 1 - (self.count - start))
            return self.emit(op, dtype, shape,
                             f"dot({a.name}, {b.name}), lhs_contracting_dims={{{lc}}}, rhs_contracting_dims={{{rc}}}")
        raise AssertionError(op)

    # ---------------------------------------------------------------- the kernel
    def kernel(self, min_nodes: int, max_nodes: int, name: str) -> FuzzKernel:
        total = self.d.integer(min_nodes, max_nodes)
        dtype = self.root_dtype()
        shape = (self.dim(), self.dim())
        root = self.value(dtype, shape, total)
        outputs = 1
        while self.count < total:
            left = total - self.count
            if left >= 2:  # another output, joined by add (Act App. D)
                other = self.value(dtype, shape, left - 1)
                root = self.emit("add", dtype, shape, f"add({root.name}, {other.name})")
                outputs += 1
            elif (last := self.last_node(dtype)) == "negate":  # one node left
                root = self.emit("negate", dtype, shape, f"negate({root.name})")
            elif last == "reverse":
                dims = ",".join(map(str, range(len(shape))))
                root = self.emit("reverse", dtype, shape, f"reverse({root.name}), dimensions={{{dims}}}")
            else:  # the output joined with itself
                root = self.emit("add", dtype, shape, f"add({root.name}, {root.name})")
        return FuzzKernel(self.text(root, name), self.count, self.ops, len(self.params), outputs)

    def usable(self, op: str, dtype: str) -> bool:
        return op in self.allowed and self.p.can(op, dtype)

    def last_node(self, dtype: str) -> str:
        """The operator that spends a last single node on the output: negate, reverse or
        an add of the output to itself, the first the profile draws in this dtype (else
        the first allowed)."""
        order = ("negate", "reverse", "add")
        return next((o for o in order if self.usable(o, dtype)), None) or \
            next((o for o in order[:2] if o in self.allowed), "add")

    def root_dtype(self) -> str:
        """Mostly what a dot produces; among the dtypes whose outputs can be joined by
        add when the profile says which can (else among all)."""
        dtypes = list(self.p.dtypes)
        joinable = [t for t in dtypes if self.p.can("add", t)] or dtypes
        sums = sorted({self.p.acc(b) for b in dtypes if self.p.can("dot", b)} & set(joinable))
        return self.choice(sums) if sums and self.chance(70) else self.choice(joinable)

    def text(self, root: _Value, name: str) -> str:
        params = ", ".join(_type(p.dtype, p.shape) for p in self.params)
        out = [f"HloModule {name}, entry_computation_layout={{({params})->{_type(root.dtype, root.shape)}}}", ""]
        for dt in self.reducers:
            out += [f"add_{dt} {{", f"  x = {dt}[] parameter(0)", f"  y = {dt}[] parameter(1)",
                    f"  ROOT sum = {dt}[] add(x, y)", "}", ""]
        out.append("ENTRY main {")
        for line in self.lines:
            out.append(line.replace(f"  {root.name} =", f"  ROOT {root.name} =", 1)
                       if line.startswith(f"  {root.name} =") else line)
        out.append("}")
        return "\n".join(out) + "\n"


def _bounds(min_nodes: int | None, max_nodes: int | None) -> tuple[int, int]:
    hi = MAX_NODES if max_nodes is None else max_nodes
    lo = MIN_NODES if min_nodes is None else min_nodes
    if hi < 1:
        raise ValueError(f"max_nodes must be at least 1, got {hi}")
    return max(1, min(lo, hi)), hi


def chosen_ops(ops: str | tuple[str, ...] | list[str] | None) -> tuple[str, ...]:
    """The operators to use: all ten, or a subset (a sequence or "dot,add")."""
    if ops is None:
        return OPS
    names = tuple(o.strip() for o in (ops.split(",") if isinstance(ops, str) else ops) if o.strip())
    bad = [o for o in names if o not in OPS]
    if bad or not names:
        raise ValueError(f"unknown fuzzing operator(s) {', '.join(bad) or '(none given)'}; "
                         f"choose from {', '.join(OPS)}")
    return names


def generate(target: TargetDef | str | Profile, draw: Draw, max_nodes: int | None = None,
             min_nodes: int | None = None, name: str = "fuzz", ops=None) -> FuzzKernel:  # noqa: ANN001
    """One kernel from the draws (the shared core of random_kernel and kernels)."""
    prof = target if isinstance(target, Profile) else profile(target)
    lo, hi = _bounds(min_nodes, max_nodes)
    return _Builder(prof, draw, chosen_ops(ops)).kernel(lo, hi, name)


def random_fuzz_kernel(target: TargetDef | str | Profile, seed: int, max_nodes: int | None = None,
                       min_nodes: int | None = None, ops=None) -> FuzzKernel:  # noqa: ANN001
    return generate(target, RandomDraw(seed), max_nodes, min_nodes, name=f"fuzz_{seed}", ops=ops)


def random_kernel(target: TargetDef | str | Profile, seed: int, max_nodes: int | None = None,
                  min_nodes: int | None = None, ops=None) -> str:  # noqa: ANN001
    """The HLO text of the kernel drawn from ``seed`` (the same text for the same arguments)."""
    return random_fuzz_kernel(target, seed, max_nodes, min_nodes, ops).text


def kernels(target: TargetDef | str | Profile, max_nodes: int | None = None, min_nodes: int | None = None,
            full: bool = False, ops=None):  # noqa: ANN001, ANN201 - a hypothesis SearchStrategy
    """Hypothesis strategy of kernels' HLO text (FuzzKernel objects when ``full``)."""
    from hypothesis import strategies as st

    prof = target if isinstance(target, Profile) else profile(target)
    lo, hi = _bounds(min_nodes, max_nodes)
    allowed = chosen_ops(ops)

    @st.composite
    def _kernel(draw):  # noqa: ANN001, ANN202
        k = _Builder(prof, HypothesisDraw(draw), allowed).kernel(lo, hi, "fuzz")
        return k if full else k.text

    return _kernel()
