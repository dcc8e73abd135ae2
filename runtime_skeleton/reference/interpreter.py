"""Evaluate IR modules on numpy arrays: the golden model every backend is checked against."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import ActgenError, EvalError
from ..ir.dtypes import DType
from ..ir.graph import Computation, Instruction, Module
from ..ir.types import TensorType, TupleType, Type
from .ops_impl import OP_IMPLS, Value


def evaluate(module: Module, args: Sequence[object]) -> list[np.ndarray]:
    """Run the entry computation; returns its result flattened (tuple leaves in order)."""
    result = evaluate_computation(module.entry_computation, module, args)
    return [np.array(leaf, copy=True) for leaf in flatten(result)]


def evaluate_computation(comp: Computation, module: Module, args: Sequence[object]) -> Value:
    """Run ``comp`` (a computation of ``module``) on ``args``, which are checked
    against the parameter types and converted to the parameter element types."""
    params = comp.parameters
    if len(args) != len(params):
        raise EvalError(f"computation '{comp.name}' takes {len(params)} arguments, got {len(args)}", comp.loc)
    checked = [
        check_argument(a, p.type, f"parameter {p.attrs['parameter_number']} ('{p.name}')")
        for a, p in zip(args, params)
    ]
    return _Interpreter(module).run(comp, checked)


def flatten(value: Value) -> list[np.ndarray]:
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in flatten(v)]
    return [value]


def check_argument(value: object, t: Type, what: str) -> Value:
    """``value`` as a value of type ``t``: same shape, converted to t's element type."""
    if isinstance(t, TupleType):
        if not isinstance(value, (tuple, list)) or len(value) != len(t.elements):
            raise EvalError(f"{what}: expected a tuple {t}")
        return tuple(check_argument(v, e, f"{what} element {i}") for i, (v, e) in enumerate(zip(value, t.elements)))
    arr = np.asarray(value)
    check_shape(arr.shape, t, what)
    return to_dtype(arr, t.dtype, what)


def check_shape(shape: tuple[int, ...], t: TensorType, what: str) -> None:
    """An array of ``shape`` can be a value of type ``t`` (checked before reading one, too)."""
    if tuple(shape) != t.shape:
        raise EvalError(f"{what}: expected {t.dtype}[{','.join(map(str, t.shape))}], "
                        f"got an array of shape ({','.join(map(str, shape))})")


def to_dtype(arr: np.ndarray, dt: DType, what: str) -> np.ndarray:
    """Convert an input array to ``dt``. Float targets round to nearest even; integer
    and pred targets accept only values they hold exactly (no silent wrap or truncation)."""
    if arr.dtype == dt.np:
        return arr
    if arr.dtype.type is np.void and dt.np.kind == "V" and arr.dtype.itemsize == dt.np.itemsize:
        return arr.view(dt.np)  # bf16 as np.load returns it (raw 2-byte records)
    if arr.dtype.kind in "biuf" or arr.dtype.kind == "V" and arr.dtype.type is not np.void:
        if dt.is_float:
            return arr.astype(dt.np)
        if _holds_exactly(arr, dt):
            return arr.astype(dt.np)
    raise EvalError(f"{what}: cannot convert {arr.dtype} values to {dt} exactly")


def _holds_exactly(arr: np.ndarray, dt: DType) -> bool:
    if arr.size == 0:
        return True
    if dt.is_pred:
        return bool(np.isin(arr, (0, 1)).all())
    lo, hi = (-(2 ** (dt.bits - 1)), 2 ** (dt.bits - 1)) if dt.is_signed else (0, 2**dt.bits)
    if arr.dtype.kind in "biu":
        return bool(arr.min() >= lo) and bool(arr.max() < hi)  # numpy compares int64/uint64 exactly
    x = arr.astype(np.float64)
    return bool((np.trunc(x) == x).all() and (x >= lo).all() and (x < hi).all())


class _Interpreter:
    """Implements ops_impl.Context for one module."""

    def __init__(self, module: Module):
        self.module = module
        self._plans: dict[int, _Plan] = {}

    def computation(self, name: str) -> Computation:
        try:
            return self.module.computations[name]
        except KeyError:
            raise EvalError(f"no computation named '{name}'") from None

    def call(self, name: str, args: Sequence[Value], *, vectorized: bool = False) -> Value:
        return self.run(self.computation(name), args, vectorized=vectorized)

    def run(self, comp: Computation, args: Sequence[Value], *, vectorized: bool = False) -> Value:
        plan = self._plans.get(id(comp))
        if plan is None:
            plan = self._plans[id(comp)] = _Plan(comp)
        if len(args) != len(plan.params):
            raise EvalError(f"computation '{comp.name}' takes {len(plan.params)} arguments, got {len(args)}",
                            comp.loc)
        env: dict[str, Value] = {}
        for i, inst in enumerate(plan.steps):
            if inst.opcode == "parameter":
                env[inst.name] = args[plan.params[inst.name]]
                continue
            value = self._step(inst, [env[o] for o in inst.operands])
            env[inst.name] = value if vectorized else _checked(value, inst.type, inst)
            for o in plan.dead_after[i]:
                del env[o]
        return env[comp.root]

    def _step(self, inst: Instruction, operands: list[Value]) -> Value:
        impl = OP_IMPLS.get(inst.opcode)
        if impl is None:
            raise EvalError(f"the reference interpreter does not implement '{inst.opcode}' "
                            f"(instruction '{inst.name}')", inst.loc)
        try:
            return impl(inst, operands, self)
        except ActgenError as err:
            if err.loc is None and inst.loc is not None:
                raise type(err)(f"{inst.opcode} '{inst.name}': {err.message}", inst.loc) from err
            raise
        except (ValueError, IndexError, TypeError, KeyError, AttributeError) as err:
            raise EvalError(f"{inst.opcode} '{inst.name}': cannot evaluate: {err}", inst.loc) from err


class _Plan:
    """How to run a computation: the parameters, then the instructions the root
    depends on in dependency order, and which values die after each step."""

    def __init__(self, comp: Computation):
        self.params = {p.name: p.attrs["parameter_number"] for p in comp.parameters}
        self.steps = list(comp.parameters) + _dependency_order(comp)
        last_use = {o: k for k, inst in enumerate(self.steps) for o in inst.operands}
        self.dead_after: list[list[str]] = [[] for _ in self.steps]
        for name, k in last_use.items():
            if name != comp.root:
                self.dead_after[k].append(name)


def _dependency_order(comp: Computation) -> list[Instruction]:
    """Non-parameter instructions reachable from the root, operands first."""
    order: list[Instruction] = []
    done: set[str] = set()
    on_path: set[str] = set()
    stack: list[tuple[str, bool]] = [(comp.root, False)]
    while stack:
        name, expanded = stack.pop()
        if name in done:
            continue
        inst = comp[name]
        if expanded:
            on_path.discard(name)
            done.add(name)
            if inst.opcode != "parameter":
                order.append(inst)
            continue
        if name in on_path:
            raise EvalError(f"'{name}' depends on itself", inst.loc)
        on_path.add(name)
        stack.append((name, True))
        for o in reversed(inst.operands):
            if o not in comp:
                raise EvalError(f"'{name}' uses '{o}', which is not defined", inst.loc)
            if o not in done:
                stack.append((o, False))
    return order


def _checked(value: Value, t: Type, inst) -> Value:
    """Each result must have its declared shape and element type: a mismatch is a bug
    in the graph or in an op implementation, never to be papered over."""
    if isinstance(t, TupleType):
        if not isinstance(value, tuple) or len(value) != len(t.elements):
            raise EvalError(f"'{inst.name}' produced a non-tuple for {t}", inst.loc)
        return tuple(_checked(v, e, inst) for v, e in zip(value, t.elements))
    assert isinstance(t, TensorType)
    value = np.asarray(value)
    if value.shape != t.shape or value.dtype != t.dtype.np:
        raise EvalError(f"{inst.opcode} '{inst.name}' computed {value.dtype}{list(value.shape)} "
                        f"but its type is {t}", inst.loc)
    return value
