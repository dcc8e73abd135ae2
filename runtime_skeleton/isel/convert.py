"""IR graphs <-> terms.

Kernels and instruction semantics enter instruction selection as terms: calls
are inlined, and each reduction's ``to_apply`` computation is replaced by a
content-addressed name (``reducer:<hash>``) so that the kernel's ``region_1``
and a semantics' ``add_bf16`` are the same operator when they compute the same
thing. ``to_module`` turns terms back into an evaluable IR module.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence

from ..errors import ActgenError
from ..hlo.printer import print_computation
from ..ir.graph import Computation, Instruction, Module
from ..ir.types import TensorType
from .terms import Term

_REDUCERS: dict[str, Computation] = {}  # content-addressed, so sharing it is safe


def reducer(name: str) -> Computation | None:
    """The scalar computation behind a content-addressed reducer name."""
    return _REDUCERS.get(name)


def reducer_name(module: Module, name: str) -> str:
    comp = _renamed(module.computations[name], "reducer")
    key = "reducer:" + hashlib.sha256("\n".join(print_computation(comp)).encode()).hexdigest()[:12]
    _REDUCERS.setdefault(key, _renamed(comp, key))
    return key


def _renamed(comp: Computation, name: str) -> Computation:
    """The computation with canonical instruction names (p0, p1, ..., v0, v1, ...)."""
    mapping: dict[str, str] = {}
    out = []
    for i, inst in enumerate(comp.instructions):
        new = f"p{inst.attrs['parameter_number']}" if inst.opcode == "parameter" else f"v{i}"
        mapping[inst.name] = new
        out.append(Instruction(new, inst.opcode, inst.type, tuple(mapping[o] for o in inst.operands), inst.attrs))
    return Computation(name, out, mapping[comp.root])


def module_to_terms(module: Module, comp: Computation | None = None,
                    args: Sequence[Term] | None = None) -> list[Term]:
    """The entry computation as terms, one per output (a tuple root gives several).
    Parameters become ``parameter`` terms unless ``args`` are given."""
    comp = comp or module.entry_computation
    env: dict[str, Term | tuple] = {}
    for inst in comp.instructions:
        ops = [env[o] for o in inst.operands]
        if inst.opcode == "parameter":
            n = inst.attrs["parameter_number"]
            env[inst.name] = args[n] if args is not None else Term("parameter", _plain(inst), (), {"parameter_number": n})
        elif inst.opcode == "call":
            callee = module.computations[inst.attrs["to_apply"]]
            outs = module_to_terms(module, callee, ops)
            env[inst.name] = outs[0] if isinstance(inst.type, TensorType) else tuple(outs)
        elif inst.opcode == "tuple":
            env[inst.name] = tuple(ops)
        elif inst.opcode == "get-tuple-element":
            env[inst.name] = ops[0][inst.attrs["index"]]
        elif not isinstance(inst.type, TensorType):
            raise ActgenError(f"instruction selection does not handle the tuple-valued '{inst.opcode}' "
                              f"('{inst.name}') yet", inst.loc)
        else:
            attrs = dict(inst.attrs)
            if "to_apply" in attrs:
                attrs["to_apply"] = reducer_name(module, attrs["to_apply"])
            env[inst.name] = Term(inst.opcode, _plain(inst), tuple(ops), attrs)
    root = env[comp.root]
    return list(_leaves(root))


def _leaves(v: Term | tuple):
    if isinstance(v, tuple):
        for x in v:
            yield from _leaves(x)
    else:
        yield v


def _plain(inst: Instruction) -> TensorType:
    return inst.tensor_type.with_layout(None)


def to_module(roots: Sequence[Term], name: str = "term", params: Sequence[TensorType] = ()) -> Module:
    """An IR module computing ``roots`` from their ``parameter`` leaves (numbered
    by their ``parameter_number``). ``params`` declares parameters that no root
    uses, so the module still takes every argument."""
    names: dict[Term, str] = {}
    insts: list[Instruction] = []
    reducers: dict[str, Computation] = {}
    for i, t in enumerate(params):
        p = Term("parameter", t.with_layout(None), (), {"parameter_number": i})
        names[p] = f"p{i}"
        insts.append(Instruction(f"p{i}", "parameter", p.type, (), p.attrs))

    def visit(t: Term) -> str:
        if t in names:
            return names[t]
        ops = tuple(visit(a) for a in t.args)  # type: ignore[arg-type]
        attrs = dict(t.attrs)
        if "to_apply" in attrs:
            reducers[attrs["to_apply"]] = _REDUCERS[attrs["to_apply"]]
        n = f"v{len(insts)}"
        insts.append(Instruction(n, t.op, t.type, ops, attrs))
        names[t] = n
        return n

    outs = [visit(r) for r in roots]
    if len(outs) > 1:
        from ..ir.types import TupleType

        insts.append(Instruction("out", "tuple", TupleType(tuple(r.type for r in roots)), tuple(outs)))
        root = "out"
    else:
        root = outs[0]
    comps = dict(reducers)
    comps[name] = Computation(name, insts, root)
    return Module(name, comps, name)
