"""Narrow integer arithmetic computed in s32, as XLA computes what a CPU lacks in a wider type.

A vector ISA often has no arithmetic on bytes or half-words (AMX's AVX-512 side adds,
subtracts, multiplies and compares dwords only). An element-wise add, subtract, multiply
or negation in s8, u8, s16 or u16 has the low bits of the same operation on the operands
extended to s32, and a maximum, minimum or clamp the same value:

    add(a, b): u8  ==  convert(add(convert(a, s32), convert(b, s32)), u8)

``widened`` rewrites each such operator of the given (operator, type) pairs so, keeping
its name for the narrowed result. A chain stays in s32: a wrapping operator reads its
operand's s32 value as it is (its extra high bits do not reach the low ones), while a
maximum, minimum or clamp reads an exact value, the narrowed one extended again when the
operand came from a wrapping operator. The e-graph has the same identity as a rule
(``axioms.elementwise-widen``), but one rewrite at a time, each a round of phase 1 over the
whole kernel; here the whole chain is in s32 before the search starts.
"""
from __future__ import annotations


from .dtypes import s32
from .graph import Computation, Instruction, Module, fresh_name
from .types import TensorType

WRAPPING = frozenset({"add", "subtract", "multiply", "negate"})
ORDERED = frozenset({"maximum", "minimum", "clamp"})
NARROW_INTS = frozenset({"s8", "u8", "s16", "u16"})


def widened(module: Module, pairs: frozenset[tuple[str, str]]) -> Module:
    """``module`` with the entry computation's element-wise operators whose (opcode, element
    type) is in ``pairs`` (narrow integer types, WRAPPING or ORDERED operators) computed in
    s32 (the module itself when it has none)."""
    comp = module.entry_computation
    if not any(_narrow(i, pairs) for i in comp.instructions):
        return module
    w = _Widener(comp, pairs)
    for name in comp.operands_first():
        w.visit(comp[name])
    return module.with_entry(list(w.out.values()), comp.root)


def _narrow(ins: Instruction, pairs: frozenset[tuple[str, str]]) -> bool:
    t = ins.type
    return (isinstance(t, TensorType) and t.dtype.name in NARROW_INTS and (ins.opcode, t.dtype.name) in pairs
            and ins.opcode in WRAPPING | ORDERED)


class _Widener:
    def __init__(self, comp: Computation, pairs: frozenset[tuple[str, str]]) -> None:
        self.comp, self.pairs = comp, pairs
        self.out: dict[str, Instruction] = {}
        self.wide: dict[str, tuple[str, bool]] = {}  # narrow name -> (its s32 value, exact: not only its low bits)
        self.extended: dict[str, str] = {}  # narrow name -> its value converted to s32

    def visit(self, ins: Instruction) -> None:
        if not _narrow(ins, self.pairs):
            self.out[ins.name] = ins
            return
        exact_needed = ins.opcode in ORDERED
        operands = [self._wide(o, exact_needed) for o in ins.operands]
        t = ins.type
        wide = Instruction(self._fresh(f"{ins.name}.s32"), ins.opcode, TensorType(s32, t.shape),
                           tuple(n for n, _ in operands), ins.attrs, ins.loc)
        self.out[wide.name] = wide
        self.out[ins.name] = Instruction(ins.name, "convert", t, (wide.name,), {}, ins.loc)
        self.wide[ins.name] = (wide.name, exact_needed and all(e for _, e in operands))

    def _wide(self, name: str, exact: bool) -> tuple[str, bool]:
        """``name``'s value in s32 (exact when asked: the narrowed value extended)."""
        got = self.wide.get(name)
        if got is not None and (got[1] or not exact):
            return got
        ext = self.extended.get(name)
        if ext is None:
            t = self.comp[name].type
            assert isinstance(t, TensorType)
            ins = Instruction(self._fresh(f"{name}.s32x"), "convert", TensorType(s32, t.shape), (name,), {},
                              self.comp[name].loc)
            self.out[ins.name] = ins
            ext = self.extended[name] = ins.name
        return ext, True

    def _fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.out or name in self.comp:
            k += 1
            name = f"{base}{k}"
        return name


def narrow_pairs(computed: set[tuple[str, str]]) -> frozenset[tuple[str, str]]:
    """The (operator, narrow integer type) pairs of WRAPPING and ORDERED operators that
    ``computed`` (the pairs some instruction computes) lacks: those ``widened`` rewrites
    for a target (a kernel no instruction computes in the narrow type either way)."""
    return frozenset((op, dt) for op in WRAPPING | ORDERED for dt in NARROW_INTS if (op, dt) not in computed)


def reverses_widened(module: Module, dtypes: frozenset[str]) -> Module:
    """``module`` with each reverse along the innermost dimension of a value of an element type
    in ``dtypes`` computed in s32: convert(reverse(convert(x, s32)), t), exactly x's reverse (a
    narrow integer's s32 value converts back to itself), keeping the reverse's name. For a
    target whose stores write no single byte, only whole words (AMX), a byte lane reverse
    has no program as moves of its elements, while the s32 one is a loop of word moves
    (``phase1.TargetFacts.widened_reverses``); the module itself when it has none."""
    comp = module.entry_computation
    lanes = {i.name for i in comp.instructions if i.opcode == "reverse" and isinstance(i.type, TensorType) and
             i.type.dtype.name in dtypes and i.type.rank - 1 in i.attrs["dimensions"]}
    if not lanes:
        return module
    out: list[Instruction] = []
    taken = {i.name for i in comp.instructions}
    for ins in comp.instructions:
        if ins.name not in lanes:
            out.append(ins)
            continue
        wide = TensorType(s32, ins.type.shape)
        up, rev = fresh_name(f"{ins.name}.s32x", taken), fresh_name(f"{ins.name}.s32", taken)
        out += [Instruction(up, "convert", wide, ins.operands, {}, ins.loc),
                Instruction(rev, "reverse", wide, (up,), ins.attrs, ins.loc),
                Instruction(ins.name, "convert", ins.type, (rev,), {}, ins.loc)]
    return module.with_entry(out, comp.root)
