"""Every instruction of a program checked over its loops' ranges, without unrolling them.

The simulator checks each instruction it executes: a known instruction, its attributes
inside their ranges, the constraint e, its slices inside their buffers
(``sim.machine.checked``). Inside loops the attributes are affine in the loop variables,
so one z3 query per instruction asks whether any iteration of the enclosing loops breaks
one of those checks. No: every iteration passes. Yes: z3's model is an iteration, which
the simulator's own check then runs on, so the error is the simulator's message at that
iteration. An instruction whose query z3 leaves undecided, or whose model the simulator
accepts (the two disagree on arithmetic), is checked iteration by iteration.

A loop of 10^6 iterations costs one query per instruction of its body, where unrolling
costs 10^6 checks per instruction (large GEMMs ran millions). An instruction executed
at most ``UNROLLED`` times is checked at each iteration, which is faster than a query.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping

from .. import budget
from ..errors import ActgenError
from ..symbolic import Z3Algebra
from ..target import TargetDef
from .model import Affine, ConcreteInstr, Item, Loop, Program, value_at

Range = tuple[str, int, int]  # a loop variable and its [start, stop)
QUERY_RLIMIT = 2_000_000  # z3 resource units a query may use (the loop instructions of the benches use < 20k)
UNROLLED = 256  # an instruction executed at most this many times is checked at each (a query costs ~200 checks)

_Z3: Z3Algebra | None = None


def verify_program(target: TargetDef, prog: Program) -> None:
    """Raise the simulator's error (a SimError, located at the instruction) for the first
    instruction that some iteration of its loops executes invalidly."""
    for ci, ranges in _instructions(prog.instructions, ()):
        live = [r for r in ranges if r[2] > r[1]]
        if len(live) < len(ranges):
            continue  # inside a loop that never runs
        used = {v for a in ci.attrs.values() if isinstance(a, Affine) for v, _ in a.terms}
        ranges = tuple(r for r in live if r[0] in used)
        if math.prod(hi - lo for _, lo, hi in ranges) <= UNROLLED:
            for env in _iterations(ranges):
                _check_at(target, ci, env)
            continue
        bad = _counterexample(target, ci, ranges)
        if bad is None:
            continue
        if bad is not _UNKNOWN:
            _check_at(target, ci, bad)  # raises, with the simulator's message
        for env in _iterations(ranges):  # undecided, or z3 and Python disagree: every iteration
            _check_at(target, ci, env)


def _check_at(target: TargetDef, ci: ConcreteInstr, env: Mapping[str, int]) -> None:
    """The simulator's checks of ``ci`` at one iteration; its error names the iteration."""
    from ..sim.machine import checked

    budget.spend("step")
    try:
        checked(target, _at(ci, env))
    except ActgenError as err:
        if env:
            err.message += " (in the iteration " + ", ".join(f"{v}={k}" for v, k in env.items()) + ")"
            err.args = (err.message,)
        raise


class _Unknown:
    pass


_UNKNOWN = _Unknown()


def _counterexample(target: TargetDef, ci: ConcreteInstr, ranges: tuple[Range, ...]) -> dict[str, int] | _Unknown | None:
    """An iteration at which ``ci`` fails the simulator's checks, as z3 finds it; None when
    none does; _UNKNOWN when z3 cannot tell or the instruction is not one of the target's."""
    global _Z3
    import z3

    ins = target.instructions.get(ci.name)
    if ins is None or {d.name for d in ins.attrs()} != set(ci.attrs):
        return _UNKNOWN  # the concrete check says what is wrong
    _Z3 = _Z3 or Z3Algebra()
    var = {v: z3.Int(v) for v, _, _ in ranges}
    a = {k: (v.const + sum(c * var[x] for x, c in v.terms)) if isinstance(v, Affine) else v
         for k, v in ci.attrs.items()}
    ok = [z3.And(d.lo <= a[d.name], a[d.name] <= d.hi) for d in ins.attrs()]
    ok.append(ins.e(a, _Z3))
    for s, (starts, lengths) in zip((ins.output,) + ins.inputs, ins.h(a, _Z3)):
        for st, n, dim in zip(starts, lengths, target.buffers[s.buffer].access_shape):
            ok += [st >= 0, n >= 1, st + n <= dim]
    solver = z3.Solver()
    solver.set("rlimit", QUERY_RLIMIT)  # z3's own count of work, not seconds: the same verdict under any load
    solver.add(*[z3.And(lo <= var[v], var[v] < hi) for v, lo, hi in ranges])
    solver.add(z3.Not(z3.And(*[z3.BoolVal(c) if isinstance(c, bool) else c for c in ok])))
    verdict = solver.check()
    budget.spend("query")
    if verdict == z3.unsat:
        return None
    if verdict != z3.sat:
        return _UNKNOWN
    model = solver.model()
    env = {v: model.eval(var[v], model_completion=True).as_long() for v, _, _ in ranges}
    try:
        _check_at(target, ci, env)
    except ActgenError:
        return env
    return _UNKNOWN


def _instructions(items: list[Item] | tuple[Item, ...], ranges: tuple[Range, ...]) \
        -> Iterator[tuple[ConcreteInstr, tuple[Range, ...]]]:
    for it in items:
        if isinstance(it, Loop):
            yield from _instructions(it.body, ranges + ((it.var, it.start, it.stop),))
        else:
            yield it, ranges


def _iterations(ranges: tuple[Range, ...]) -> Iterator[dict[str, int]]:
    if not ranges:
        yield {}
        return
    (v, lo, hi), rest = ranges[0], ranges[1:]
    for k in range(lo, hi):
        for env in _iterations(rest):
            yield {v: k, **env}


def _at(ci: ConcreteInstr, env: Mapping[str, int]) -> ConcreteInstr:
    return ConcreteInstr(ci.name, {k: value_at(v, env) for k, v in ci.attrs.items()}, ci.loc)
