"""Check an IsaSpec and complete it (attribute ranges, in-place aliases).

What is proved, per instruction (z3 over the symbolic attributes):
- every name is declared: buffers, attributes (slices, constraints, latency,
  semantics shapes), and every declared attribute is used (in a slice, or by the
  parsed semantics' shapes and attributes; β only in slices and constraints);
- the constraints e(α, β) together with "every slice lies inside its buffer"
  are satisfiable, and bound every attribute (the bounds become its range);
- every divisor in the slices, constraints and latency is non-zero wherever the
  constraints hold (z3 divides as Python does: runtime_skeleton.symbolic.Z3Algebra);
- for every α allowed by those constraints, the semantics' parameter types equal
  the declared input slices and its ROOT type equals the output slice;
- the semantics are well-typed HLO using only supported ops (checked by the HLO
  front end at several concrete α: the range corners and more models).
"""
from __future__ import annotations

import dataclasses
import itertools
import re

import z3

from runtime_skeleton.errors import ActgenError, SourceLoc
from runtime_skeleton.hlo import parse_module
from runtime_skeleton.ir.types import TensorType

from . import expr as E
from .errors import IsaError
from .model import Attribute, Buffer, Instruction, IsaSpec, Slice

SAMPLES = 6  # concrete α instantiations whose semantics are fully type-checked


def check(spec: IsaSpec) -> IsaSpec:
    """Return the spec with attribute ranges and aliases filled in, or raise IsaError."""
    bufs = spec.all_buffers
    instructions = {name: _check_instruction(spec, ins, bufs) for name, ins in spec.instructions.items()}
    return dataclasses.replace(spec, instructions=instructions)


def _slice_type(sl: Slice, buf: Buffer, lengths: list) -> tuple:
    return (buf.dtype, tuple(lengths) + buf.unit_shape)


def _check_instruction(spec: IsaSpec, ins: Instruction, bufs: dict[str, Buffer]) -> Instruction:
    declared = {a.name: a for a in ins.attrs}
    slices = ins.inputs + (ins.output,)
    seen_vars: dict[str, Slice] = {}
    for sl in slices:
        if sl.buffer not in bufs:
            raise IsaError(f"unknown buffer '{sl.buffer}' (declared: {', '.join(bufs)})", sl.loc)
        buf = bufs[sl.buffer]
        if len(sl.starts) != len(buf.access_shape):
            raise IsaError(
                f"buffer '{buf.name}' has {len(buf.access_shape)} access dimension(s) but the slice gives "
                f"{len(sl.starts)} range(s)", sl.loc)
        if sl.var in seen_vars and sl is not ins.output:
            raise IsaError(f"slice name '{sl.var}' used twice in '{ins.name}'", sl.loc)
        seen_vars[sl.var] = sl
        for e in sl.starts + sl.lengths:
            _check_names(e, declared, ins)
    for e in ins.constraints:
        _check_names(e, declared, ins)
        _expect(e, "bool", f"a 'where' clause of '{ins.name}' must be a condition (such as 'n <= 16')", ins)
    _check_names(ins.latency, declared, ins)
    _expect(ins.latency, "int", f"the latency of '{ins.name}' must be an integer", ins)
    for sl in slices:
        for e in sl.starts + sl.lengths:
            _expect(e, "int", f"a slice bound of '{ins.name}' must be an integer", ins, sl.loc)
    for v in ins.latency.free_vars():
        if declared[v].kind != "comp":
            raise IsaError(f"latency may only use computational attributes; '{v}' is an addressing attribute",
                           ins.latency.loc or ins.loc)

    # The semantics, parsed with every attribute a z3 integer: the attributes its shapes and
    # attributes use are the variables in them (a word elsewhere, an opcode or a name, is no use).
    zv = {name: z3.Int(name) for name in declared}
    module = _parse_semantics(ins, {**spec.constants, **zv}, infer_types=False)
    sem_uses = _attributes_used(module, zv)
    used = set().union(*(e.free_vars() for sl in slices for e in sl.starts + sl.lengths)) | set(sem_uses)
    for a in ins.attrs:
        if a.name not in used:
            raise IsaError(f"attribute '{a.name}' of '{ins.name}' is declared but never used", a.loc)
    for n, hlo_ins in sem_uses.items():
        if declared[n].kind == "addr":
            raise IsaError(f"semantics may only use computational attributes (α); '{n}' is an addressing "
                           f"attribute of '{ins.name}'", _word_loc(ins, n, hlo_ins.loc))

    base = _domain(ins, bufs, zv)
    _prove_satisfiable(ins, base, zv)
    _prove_divisors_nonzero(ins, base, zv)
    ranges = _ranges(ins, base, zv)
    _prove_positive_latency(ins, base, zv)
    comp_names = [a.name for a in ins.comp_attrs]

    # Semantics, symbolically (as parsed above): parameters and ROOT against the declared slices.
    entry = module.entry_computation
    params = entry.parameters
    if len(params) != len(ins.inputs):
        raise IsaError(f"semantics of '{ins.name}' has {len(params)} parameter(s) but the instruction declares "
                       f"{len(ins.inputs)} input slice(s)", ins.semantics.loc)
    pairs = [(p, sl, "parameter") for p, sl in zip(params, ins.inputs)]
    pairs.append((entry.root_instruction, ins.output, "ROOT"))
    for hlo_ins, sl, role in pairs:
        if hlo_ins.name != sl.var:
            raise IsaError(f"{role} '{hlo_ins.name}' of the semantics should be named '{sl.var}' like the slice it "
                           f"reads or writes (declared at {sl.loc})", hlo_ins.loc or ins.semantics.loc)
        _prove_slice_type(ins, hlo_ins, sl, bufs[sl.buffer], base, zv)

    # Semantics, concretely: full HLO type checking at several α.
    for alpha in _samples(base, [zv[n] for n in comp_names], comp_names):
        _parse_semantics(ins, {**spec.constants, **alpha}, infer_types=True)

    attrs = lambda group: tuple(dataclasses.replace(a, lo=ranges[a.name][0], hi=ranges[a.name][1]) for a in group)
    return dataclasses.replace(ins, comp_attrs=attrs(ins.comp_attrs), addr_attrs=attrs(ins.addr_attrs),
                               alias=_alias(ins, base, zv))


Z3_TIMEOUT_S = 20  # per z3 query of the checker (docs/limits.md): a nonlinear 'where' can run forever


def _solver() -> z3.Solver:
    s = z3.Solver()
    s.set("timeout", Z3_TIMEOUT_S * 1000)
    return s


def _optimizer() -> z3.Optimize:
    opt = z3.Optimize()
    opt.set("timeout", Z3_TIMEOUT_S * 1000)
    return opt


def _decide(s: z3.Solver | z3.Optimize, what: str, loc: SourceLoc | None) -> z3.CheckSatResult:
    """s.check(), where 'unknown' (z3's time limit) is an error naming the question."""
    r = s.check()
    if r == z3.unknown:
        raise IsaError(f"z3 could not decide {what} within {Z3_TIMEOUT_S} s (nonlinear constraints are "
                       f"undecidable in general; keep 'where' clauses linear)", loc)
    return r


def _prove_positive_latency(ins: Instruction, base: list, zv: dict[str, z3.ArithRef]) -> None:
    """Every instruction takes at least one cycle, whatever its attributes within 'where'."""
    s = _solver()
    s.add(base)
    lat = E.to_z3(ins.latency, zv)
    s.add(lat < 1)
    if _decide(s, f"whether the latency of '{ins.name}' stays positive", ins.latency.loc or ins.loc) == z3.sat:
        m = s.model()
        at = ", ".join(f"{v}={m.eval(zv[v], model_completion=True)}" for v in sorted(ins.latency.free_vars()))
        raise IsaError(f"the latency of '{ins.name}' must be at least 1 cycle; it is "
                       f"{m.eval(lat, model_completion=True)}" + (f" at {at}" if at else ""),
                       ins.latency.loc or ins.loc)


def _expect(e: E.Expr, want: str, message: str, ins: Instruction, loc: SourceLoc | None = None) -> None:
    """``e`` type-checks (``E.kind``) to ``want``; else an IsaError located at the part at fault."""
    try:
        got = E.kind(e)
    except E.ExprTypeError as err:
        raise IsaError(str(err), err.at.loc or e.loc or loc or ins.loc) from None
    if got != want:
        raise IsaError(f"{message}, not '{e}'", e.loc or loc or ins.loc)


def _check_names(e: E.Expr, declared: dict[str, Attribute], ins: Instruction) -> None:
    for sub in _walk(e):
        if isinstance(sub, E.Var) and sub.name not in declared:
            raise IsaError(f"'{sub.name}' is not an attribute of '{ins.name}' nor a constant "
                           f"(attributes: {', '.join(declared) or 'none'})", sub.loc or e.loc or ins.loc)


def _walk(e: E.Expr):
    yield e
    for c in e.children():
        yield from _walk(c)


def _domain(ins: Instruction, bufs: dict[str, Buffer], zv: dict[str, z3.ArithRef]) -> list:
    """e(α, β) plus: every slice is non-empty and inside its buffer."""
    facts = [E.to_z3(c, zv) for c in ins.constraints]
    for sl in ins.inputs + (ins.output,):
        for s, n, dim in zip(sl.starts, sl.lengths, bufs[sl.buffer].access_shape):
            zs, zn = E.to_z3(s, zv), E.to_z3(n, zv)
            facts += [zs >= 0, zn >= 1, zs + zn <= dim]
    return facts


def _prove_satisfiable(ins: Instruction, base: list, zv: dict[str, z3.ArithRef]) -> None:
    """Some attribute values are valid; else the error names the conflicting 'where' clauses."""
    s = _solver()
    tracked = {}
    for i, c in enumerate(ins.constraints):
        p = z3.Bool(f"__c{i}")
        tracked[p.get_id()] = c
        s.assert_and_track(E.to_z3(c, zv), p)
    s.add(base[len(ins.constraints):])
    if _decide(s, f"whether the constraints of '{ins.name}' are satisfiable", ins.loc) == z3.unsat:
        core = [tracked[p.get_id()] for p in s.unsat_core() if p.get_id() in tracked]
        core.sort(key=lambda c: (c.loc.line, c.loc.col) if c.loc else (0, 0))  # z3's core order varies
        loc = core[0].loc if core else ins.loc
        shown = " and ".join(str(c) for c in core) or "the slice bounds"
        raise IsaError(f"constraints of '{ins.name}' are unsatisfiable ({shown}, with every slice inside its buffer)",
                       loc)


def _prove_divisors_nonzero(ins: Instruction, base: list, zv: dict[str, z3.ArithRef]) -> None:
    """Every divisor of a '/' or '%' in the slices, 'where' and latency is non-zero at every
    attribute value the instruction allows. The generated backend divides with Python, which
    raises at 0; z3 gives ``x / 0`` any value, so without this proof the derived ranges and
    proofs could describe values the backend refuses. (A divisor that is a constant zero is
    refused earlier, by the type check.) Once proved, the z3 domain ``base`` is exactly the
    set of values the generated ``e`` and ``h`` accept."""
    seen: set[str] = set()
    exprs = [*ins.constraints, *(e for sl in ins.inputs + (ins.output,) for e in sl.starts + sl.lengths), ins.latency]
    for x in (sub for e in exprs for sub in _walk(e)):
        if not (isinstance(x, E.BinOp) and x.op in ("/", "%") and x.rhs.free_vars()) or str(x) in seen:
            continue
        seen.add(str(x))
        s = _solver()
        s.add(base)
        s.add(E.to_z3(x.rhs, zv) == 0)
        where = x.loc or ins.loc
        if _decide(s, f"whether the divisor in '{x}' can be 0", where) == z3.sat:
            m = s.model()
            at = ", ".join(f"{v}={m.eval(zv[v], model_completion=True)}" for v in sorted(x.rhs.free_vars()))
            raise IsaError(f"division by zero in '{x}' at {at}, which the constraints of '{ins.name}' allow; "
                           f"exclude it with a 'where' clause (such as '{x.rhs} != 0')", where)


def _ranges(ins: Instruction, base: list, zv: dict[str, z3.ArithRef]) -> dict[str, tuple[int, int]]:
    """Each attribute's smallest and largest valid value."""
    out = {}
    for name, v in zv.items():
        bounds = []
        for sense in ("min", "max"):
            opt = _optimizer()
            opt.add(base)
            h = opt.minimize(v) if sense == "min" else opt.maximize(v)
            _decide(opt, f"the range of attribute '{name}' of '{ins.name}'", ins.loc)
            val = opt.lower(h) if sense == "min" else opt.upper(h)
            if not z3.is_int_value(val):
                attr = next(a for a in ins.attrs if a.name == name)
                side = "lower" if sense == "min" else "upper"
                raise IsaError(f"attribute '{name}' of '{ins.name}' has no {side} bound; add a 'where' constraint",
                               attr.loc)
            bounds.append(val.as_long())
        out[name] = (bounds[0], bounds[1])
    return out


def _attributes_used(module, zv: dict[str, z3.ArithRef]) -> dict[str, object]:  # noqa: ANN001  (an HLO Module)
    """The attributes a semantics module parsed over ``zv`` uses (in a shape or an attribute such
    as ``slice``), each with the first HLO instruction that uses it."""
    by_id = {v.get_id(): name for name, v in zv.items()}
    out: dict[str, object] = {}
    for comp in module.computations.values():
        for inst in comp.instructions:
            for name in _z3_names(inst.type, by_id) | _z3_names(dict(inst.attrs), by_id):
                out.setdefault(name, inst)
    return {n: out[n] for n in zv if n in out}  # in declaration order


def _z3_names(value: object, by_id: dict[int, str]) -> set[str]:
    """Names of the variables ``by_id`` in the z3 terms anywhere in ``value`` (a type, an HLO
    attribute: dataclasses, tuples, lists, dicts)."""
    out: set[str] = set()
    seen: set[int] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, z3.ExprRef):
            if v.get_id() in seen:
                continue
            seen.add(v.get_id())
            if v.get_id() in by_id:
                out.add(by_id[v.get_id()])
            stack.extend(v.children())
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, tuple | list):
            stack.extend(v)
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            stack.extend(getattr(v, f.name) for f in dataclasses.fields(v))
    return out


def _word_loc(ins: Instruction, word: str, near: SourceLoc | None) -> SourceLoc:
    """Location in the .isa file of the first occurrence of ``word`` in the semantics after
    the '=' of the HLO instruction at ``near`` (that instruction's place if none)."""
    text, loc = ins.semantics.text, ins.semantics.loc
    start = 0
    if near is not None:
        lines = text.split("\n")
        k = near.line - loc.line
        if 0 <= k < len(lines):
            start = sum(len(x) + 1 for x in lines[:k]) + (near.col - loc.col if k == 0 else near.col - 1)
            eq = text.find("=", start)
            start = eq + 1 if eq >= 0 else start
    m = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])").search(text, max(start, 0))
    if m is None:
        return near or loc
    before = text[: m.start()]
    line = loc.line + before.count("\n")
    col = (loc.col + len(before)) if "\n" not in before else len(before) - before.rfind("\n")
    return SourceLoc(loc.file, line, col)


def _parse_semantics(ins: Instruction, symbols: dict, *, infer_types: bool):
    loc = ins.semantics.loc
    try:
        return parse_module(ins.semantics.text, loc.file, symbols=symbols, start_line=loc.line,
                            start_col=loc.col, infer_types=infer_types, default_name=ins.name)
    except ActgenError as err:
        if infer_types:
            concrete = ", ".join(f"{k}={v}" for k, v in symbols.items() if k in ins.attr_names)
            if concrete:
                raise IsaError(f"{err.message} (with {concrete})", err.loc) from None
        raise IsaError(err.message, err.loc) from None


def _prove_slice_type(ins: Instruction, hlo_ins, sl: Slice, buf: Buffer, base: list, zv) -> None:
    t = hlo_ins.type
    where = hlo_ins.loc or ins.semantics.loc
    if not isinstance(t, TensorType):
        raise IsaError(f"'{sl.var}' must be a tensor, not a tuple", where)
    want_dims = [E.to_z3(n, zv) for n in sl.lengths] + [z3.IntVal(d) for d in buf.unit_shape]
    desc = f"slice {sl.buffer}[{', '.join(f'{s} : {n}' for s, n in zip(sl.starts, sl.lengths))}]"
    if t.dtype != buf.dtype:
        raise IsaError(f"'{sl.var}' is {t.dtype.name} in the semantics but {desc} holds {buf.dtype.name}", where)
    if len(t.shape) != len(want_dims):
        raise IsaError(f"'{sl.var}' has rank {len(t.shape)} in the semantics but {desc} has rank {len(want_dims)} "
                       f"({len(sl.lengths)} access + {len(buf.unit_shape)} unit dimension(s))", where)
    s = _solver()
    s.add(base)
    s.add(z3.Or([_z(a) != b for a, b in zip(t.shape, want_dims)]))
    if _decide(s, f"whether '{sl.var}' always has the type of {desc}", where) == z3.sat:
        m = s.model()
        ev = lambda x: m.eval(_z(x), model_completion=True).as_long()
        alpha = ", ".join(f"{a.name}={ev(zv[a.name])}" for a in ins.comp_attrs)
        got = f"{t.dtype.name}[{','.join(str(ev(d)) for d in t.shape)}]"
        want = f"{buf.dtype.name}[{','.join(str(ev(d)) for d in want_dims)}]"
        raise IsaError(f"'{sl.var}' is {got} in the semantics but {desc} is {want}"
                       + (f" when {alpha}" if alpha else ""), where)


def _z(x):
    return z3.IntVal(x) if isinstance(x, int) else x


def _samples(base: list, vars_: list, names: list[str]) -> list[dict[str, int]]:
    """Concrete α values satisfying the constraints: each corner of the range that
    is feasible, then further distinct models."""
    if not vars_:
        return [{}]
    out: list[dict[str, int]] = []
    for senses in itertools.islice(itertools.product(("min", "max"), repeat=len(vars_)), SAMPLES):
        opt = _optimizer()
        opt.add(base)
        for v, sense in zip(vars_, senses):
            opt.minimize(v) if sense == "min" else opt.maximize(v)
        if opt.check() == z3.sat:
            m = opt.model()
            alpha = {n: m.eval(v, model_completion=True).as_long() for n, v in zip(names, vars_)}
            if alpha not in out:
                out.append(alpha)
    s = _solver()
    s.add(base)
    for a in out:
        s.add(z3.Or([v != a[n] for n, v in zip(names, vars_)]))
    while len(out) < SAMPLES and s.check() == z3.sat:
        m = s.model()
        alpha = {n: m.eval(v, model_completion=True).as_long() for n, v in zip(names, vars_)}
        out.append(alpha)
        s.add(z3.Or([v != alpha[n] for n, v in zip(names, vars_)]))
    return out


def _alias(ins: Instruction, base: list, zv) -> int | None:
    """The input whose slice the output provably always equals (read-modify-write)."""
    for i, sl in enumerate(ins.inputs):
        if sl.buffer != ins.output.buffer:
            continue
        s = _solver()
        s.add(base)
        same = [E.to_z3(a, zv) == E.to_z3(b, zv) for a, b in
                zip(sl.starts + sl.lengths, ins.output.starts + ins.output.lengths)]
        s.add(z3.Not(z3.And(same)))
        if s.check() == z3.unsat:
            return i
    return None
