"""Act Fig. 18-20: the generated Gemmini backend against "the library way".

For each Gemmini evaluation kernel (MAC, GEMM, ADD and the nine compositions in
examples/kernels/gemmini_*.hlo):

(a) backend: the whole kernel is compiled by generated.gemmini; cycles come from the
    timing model (runtime_skeleton.sim.timing.time_program) and HBM bytes are the sum of
    bytes_moved over the (src, dst) pairs with HBM ("d0") at one end. The program is
    verified on the simulator against the reference interpreter (the ✓ column).
(b) library: the entry computation is partitioned into library calls, generically from
    the HLO: every `dot`, and every `add` of two non-constant values, starts a call; a call
    takes the chain of single-use elementwise ops that follows it (convert, clamp,
    maximum/minimum, calls of elementwise computations such as jax's clip, ...) whose
    other operands are constants or broadcasts of constants, until the next dot or
    add of two non-constant values. Ops that belong to no call (e.g. convert(parameter))
    are folded into every call that reads them, as a prologue; constants are copied into
    each call that uses them. Each call becomes a standalone HLO module (parameters: its
    external inputs, types as in the original with row-major layouts; root: its output),
    compiled separately, so every intermediate result goes through HBM. Library cycles and
    bytes are the sums over the calls (kernels run one after another).

Speedup = library cycles / backend cycles; data-movement ratio = library bytes / backend
bytes. Results are cached in bench/.cache/ (keyed by the kernel text hash); --no-cache
recompiles. Use --show-calls to print the generated library-call modules.

    python bench/gemmini_library.py [--kernels NAME ...] [--timeout S] [--no-cache]
"""
from __future__ import annotations

import argparse
import sys
import time

from _common import GEMMINI_EVAL, KERNELS, Cache, compile_record, one_line, print_table, progress

from runtime_skeleton.hlo import parse_module
from runtime_skeleton.hlo.printer import print_module
from runtime_skeleton.ir.graph import Computation, Instruction, Module
from runtime_skeleton.ir.types import Layout, TensorType

TARGET = "gemmini"

# Elementwise ops that may form a library call's epilogue (or a prologue).
ELEMENTWISE = {
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "clamp", "convert", "negate", "abs",
    "select", "compare", "and", "or", "xor", "not", "shift-left", "shift-right-arithmetic",
    "shift-right-logical", "round-nearest-even", "round-nearest-afz", "floor", "ceil", "sign",
    "exponential", "log", "tanh", "logistic", "sqrt", "rsqrt", "power", "remainder", "copy",
    "reduce-precision", "bitcast-convert",
}
SHAPE_OF_CONST = {"broadcast", "reshape", "convert", "copy", "bitcast", "transpose"}


def is_constant(comp: Computation, name: str) -> bool:
    """A constant, or a broadcast/reshape/convert of constants."""
    i = comp[name]
    if i.opcode == "constant":
        return True
    if i.opcode in SHAPE_OF_CONST and i.operands:
        return all(is_constant(comp, o) for o in i.operands)
    return False


def elementwise_computation(m: Module, name: str) -> bool:
    """A called computation made only of elementwise ops on broadcast parameters/constants."""
    comp = m.computations.get(name)
    if comp is None:
        return False
    ok = ELEMENTWISE | {"parameter", "constant", "broadcast", "reshape"}
    return all(i.opcode in ok or (i.opcode == "call" and elementwise_computation(m, i.attr("to_apply")))
               for i in comp)


def is_elementwise(m: Module, i: Instruction) -> bool:
    if i.opcode == "call":
        return elementwise_computation(m, i.attr("to_apply"))
    return i.opcode in ELEMENTWISE


def is_anchor(comp: Computation, i: Instruction) -> bool:
    if i.opcode in ("dot", "convolution"):
        return True
    return i.opcode == "add" and not any(is_constant(comp, o) for o in i.operands)


def partition(m: Module) -> list[tuple[list[str], str]]:
    """Library calls of the entry computation: (instruction names in definition order,
    output name) for each (see the module docstring)."""
    comp = m.entry_computation
    order = {i.name: k for k, i in enumerate(comp.instructions)}
    owner: dict[str, set[int]] = {}
    groups: list[list[str]] = []
    outputs: list[str] = []
    for i in comp.instructions:
        if not is_anchor(comp, i) or i.name in owner:
            continue
        g = [i.name]
        owner[i.name] = {len(groups)}
        cur = i
        while cur.name != comp.root:
            users = comp.users(cur.name)
            if len(users) != 1:
                break
            u = users[0]
            if u.name in owner or is_anchor(comp, u) or not is_elementwise(m, u):
                break
            if not all(o == cur.name or is_constant(comp, o) for o in u.operands):
                break
            g.append(u.name)
            owner[u.name] = {len(groups)}
            cur = u
        groups.append(g)
        outputs.append(cur.name)
    # Ops in no call: fold into each consuming call (prologue), or make a call of their own.
    for i in reversed(comp.instructions):
        if i.opcode in ("parameter", "constant") or i.name in owner or is_constant(comp, i.name):
            continue
        consumers = set().union(*(owner.get(u.name, set()) for u in comp.users(i.name)))
        if consumers:
            for k in consumers:
                groups[k].append(i.name)
            owner[i.name] = consumers
        else:
            owner[i.name] = {len(groups)}
            groups.append([i.name])
            outputs.append(i.name)
    for g in groups:
        g.sort(key=order.__getitem__)
    return list(zip(groups, outputs))


def row_major(t):
    return TensorType(t.dtype, t.shape, Layout.default(len(t.shape))) if isinstance(t, TensorType) else t


def called(m: Module, names: list[str]) -> list[str]:
    """Computations reachable through to_apply/calls attributes, in module text order."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        c = todo.pop()
        if c in seen or c not in m.computations:
            continue
        seen.add(c)
        for i in m.computations[c]:
            for v in i.attrs.values():
                for s in (v if isinstance(v, (tuple, list)) else (v,)):
                    if isinstance(s, str) and s in m.computations:
                        todo.append(s)
    return [c for c in m.computations if c in seen]


def call_module(m: Module, g: list[str], out: str, index: int) -> Module:
    comp = m.entry_computation
    inside = set(g)
    insts: list[Instruction] = []
    params: list[Instruction] = []
    added: set[str] = set()

    def need(name: str) -> None:
        """Bring an operand from outside the call into the module: a constant (copied with
        its broadcasts) or a parameter."""
        if name in inside or name in added:
            return
        added.add(name)
        i = comp[name]
        if is_constant(comp, name):
            for o in i.operands:
                need(o)
            insts.append(i)
        else:
            p = Instruction(name, "parameter", row_major(i.type), (), {"parameter_number": len(params)})
            params.append(p)
            insts.append(p)

    for n in g:
        for o in comp[n].operands:
            need(o)
        insts.append(comp[n])
    callees = called(m, [a for n in g for a in comp[n].attrs.values() if isinstance(a, str)])
    entry = Computation(comp.name, insts, out)
    comps = {c: m.computations[c] for c in callees}
    comps[comp.name] = entry
    return Module(f"{m.name}_call{index}", comps, comp.name)


def library_calls(text: str) -> list[tuple[str, str]]:
    """(description, HLO text) of each library call of a kernel."""
    m = parse_module(text)
    comp = m.entry_computation
    calls = []
    for k, (g, out) in enumerate(partition(m)):
        cm = call_module(m, g, out, k)
        src = print_module(cm)
        parse_module(src)  # the call must be a valid module on its own
        ops = [comp[n].opcode for n in g]
        desc = "+".join(ops) if len(ops) <= 6 else "+".join(ops[:6]) + "…"
        calls.append((f"{out}: {desc}", src))
    return calls


def measure(text: str, cache: Cache, timeout: float, do_verify: bool, label: str) -> dict:
    extra = f"t={timeout}" + (",v" if do_verify else "")
    rec = cache.get("lib", TARGET, text, extra)
    if rec is not None:
        progress(f"  {label}: cached")
        return rec
    t0 = time.perf_counter()
    progress(f"  {label}: compiling ...")
    rec = compile_record(TARGET, text, timeout=timeout, do_verify=do_verify)
    status = f"{rec['cycles']} cycles" if rec["ok"] else "FAILED: " + one_line(rec["error"], 60)
    progress(f"  {label}: {status} ({time.perf_counter() - t0:.1f} s)")
    cache.put("lib", TARGET, text, rec, extra)
    return rec


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--kernels", nargs="+", default=GEMMINI_EVAL, metavar="NAME",
                    help="kernels in examples/kernels (default: the 12 Gemmini evaluation kernels)")
    ap.add_argument("--timeout", type=float, default=180.0, help="compile timeout per kernel, s (default 180)")
    ap.add_argument("--no-cache", action="store_true", help="recompile instead of reading bench/.cache/")
    ap.add_argument("--show-calls", action="store_true", help="print each library call's HLO module")
    args = ap.parse_args(argv)
    cache = Cache(not args.no_cache)
    t_start = time.perf_counter()

    rows = []
    for name in args.kernels:
        path = KERNELS / f"{name}.hlo"
        if not path.exists():
            rows.append([name, "", "", "", "", "", "", "", f"no such kernel {path}"])
            continue
        text = path.read_text()
        progress(f"{name}:")
        be = measure(text, cache, args.timeout, True, "backend")
        notes = []
        try:
            calls = library_calls(text)
        except Exception as e:
            calls = []
            notes.append("library split failed: " + one_line(f"{type(e).__name__}: {e}", 60))
        lib_cycles = lib_bytes = 0
        lib_ok = bool(calls)
        for k, (desc, src) in enumerate(calls):
            if args.show_calls:
                print(f"--- {name} library call {k} ({desc})\n{src}")
            r = measure(src, cache, args.timeout, False, f"library call {k} [{desc}]")
            if r["ok"]:
                lib_cycles += r["cycles"]
                lib_bytes += r["hbm_bytes"]
            else:
                lib_ok = False
                notes.append(f"call {k} failed: " + one_line(r["error"], 60))
        if be["ok"]:
            probs = be.get("verify_problems", [])
            check = "✓" if not probs else "✗"
            if probs:
                notes.append("verify: " + one_line(probs[0], 60))
        else:
            check = ""
            notes.insert(0, "backend failed: " + one_line(be["error"], 60))
        row = [name, be["cycles"] if be["ok"] else "—", lib_cycles if lib_ok else "—"]
        row.append(f"{lib_cycles / be['cycles']:.2f}×" if be["ok"] and lib_ok and be["cycles"] else "—")
        row += [be["hbm_bytes"] if be["ok"] else "—", lib_bytes if lib_ok else "—"]
        row.append(f"{lib_bytes / be['hbm_bytes']:.2f}×" if be["ok"] and lib_ok and be["hbm_bytes"] else "—")
        row += [check, f"{len(calls)}", "; ".join(notes)]
        rows.append(row)

    print_table("Gemmini: generated backend vs. library calls (Act Fig. 18-20)",
                ["kernel", "backend cycles", "library cycles", "speedup", "backend HBM B", "library HBM B",
                 "data-mvmt ratio", "✓", "calls", "notes"], rows, right={1, 2, 3, 4, 5, 6, 8})
    print(f"total time {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
