"""Phase 2 (Act §6): liveness, orders, the CP-SAT problem and its explanations."""
import dataclasses
import importlib
import pathlib

import pytest
from ortools.sat.python import cp_model

from runtime_skeleton import budget
from runtime_skeleton.alloc import AllocationFailed, allocate, heuristic_order, phase2, topological_orders
from runtime_skeleton.alloc.algebra import CpSatAlgebra
from runtime_skeleton.alloc.liveness import interference, live_ranges
from runtime_skeleton.emit import emit_program
from runtime_skeleton.hlo import parse_file
from runtime_skeleton.isel.phase1 import InstructionSelector
from runtime_skeleton.reference import evaluate
from runtime_skeleton.reference.compare import compare_outputs
from runtime_skeleton.reference.npz_io import random_inputs
from runtime_skeleton.sim import run_program

ROOT = pathlib.Path(__file__).resolve().parent.parent


def target(name):
    return importlib.import_module(f"generated.{name}").TARGET


@pytest.fixture(scope="module")
def gemm():
    sel = InstructionSelector(target("gemmini"), parse_file(ROOT / "examples/kernels/gemmini_gemm.hlo"))
    return sel, sel.first()


def _instr(g, op):
    return [i for i, n in enumerate(g.nodes) if n.op == op]


def test_live_ranges_follow_the_order(gemm):
    _, g = gemm
    order = heuristic_order(g, target("gemmini"))
    assert [g.nodes[v].op for v in order][-1] == "mvout_acc32"
    r = live_ranges(g, order)
    n = len(order)
    for v, node in enumerate(g.nodes):
        if node.kind == "input":
            assert (r[v].start, r[v].end) == (0, n)
    out = g.outputs[0]
    assert r[out].end == n
    pos = {v: p for p, v in enumerate(order, start=1)}
    for v in order:  # a result lives from its definition to just before its last reader
        readers = [pos[u] for u, m in enumerate(g.nodes) if v in m.args]
        if readers:
            assert (r[v].start, r[v].end) == (pos[v], max(readers) - 1)


def test_every_order_is_topological_and_the_heuristic_comes_first(gemm):
    _, g = gemm
    t = target("gemmini")
    orders = list(topological_orders(g, t, []))
    assert orders[0] == heuristic_order(g, t)
    for order in orders:
        seen = set()
        for v in order:
            assert all(not g.nodes[a].is_instruction or a in seen for a in g.nodes[v].args)
            seen.add(v)
    # the two loads commute: two orders, with different interference graphs
    assert len(orders) == 2


def test_orders_containing_a_failed_interference_graph_are_skipped(gemm):
    _, g = gemm
    t = target("gemmini")
    first = heuristic_order(g, t)
    phi = interference(g, live_ranges(g, first))
    rest = list(topological_orders(g, t, [phi]))
    assert first not in rest
    assert all(not phi <= interference(g, live_ranges(g, o)) for o in rest)
    assert list(topological_orders(g, t, [frozenset()])) == []  # the empty graph is in every graph


def test_order_enumeration_stops_at_its_deadline(gemm):
    """Past the deadline no further order is enumerated (the heuristic one still is):
    when every order is pruned, nothing is yielded, so phase 2 could not stop the
    enumeration itself (a fuzz kernel ran 6 s past its limit there)."""

    _, g = gemm
    t = target("gemmini")
    past = budget.now() - 1.0
    assert list(topological_orders(g, t, [], deadline=past)) == [heuristic_order(g, t)]
    assert len(list(topological_orders(g, t, []))) == 2


def test_allocation_satisfies_the_instruction_constraints_and_runs(gemm):
    sel, g = gemm
    t = target("gemmini")
    a = phase2(t, g)
    for v, attrs in a.attrs.items():
        assert t.instructions[g.nodes[v].op].e(attrs)
    prog = emit_program(t.name, g, a, sel.input_types, sel.output_types)
    x = random_inputs(sel.input_types, 3)
    assert compare_outputs(run_program(t, prog, x), evaluate(sel.module, x)) == []
    # the two live operands of compute_ws never share scratchpad rows
    a_rows = [a.starts[v][0] for v in _instr(g, "mvin")]
    assert abs(a_rows[0] - a_rows[1]) >= 16


def test_an_order_that_overflows_a_buffer_is_explained_and_another_order_is_tried(gemm):
    """With a 24-row scratchpad, both 16-row operands cannot be live at once: the
    order loading both first fails with CSP4 naming the buffer, and phase 2 falls
    back to the order that loads B, preloads it, and then loads A (§6.4)."""
    _, g = gemm
    t = target("gemmini")
    small = dataclasses.replace(t.buffers["sp"], access_shape=(24,))
    tiny = dataclasses.replace(t, buffers={**t.buffers, "sp": small})
    loads = _instr(g, "mvin")
    rest = [v for v in heuristic_order(g, t) if v not in loads]
    with pytest.raises(AllocationFailed) as err:
        allocate(tiny, g, loads + rest)
    assert "CSP4" in err.value.message and "buffer sp overflows" in err.value.message
    assert not err.value.order_independent
    a = phase2(tiny, g)
    ops = [g.nodes[v].op for v in a.order]
    assert ops.index("preload_ws") < max(i for i, op in enumerate(ops) if op == "mvin")
    tinier = dataclasses.replace(t, buffers={**t.buffers, "sp": dataclasses.replace(small, access_shape=(15,))})
    with pytest.raises(AllocationFailed, match="buffer sp overflows: 16 of 15 rows"):
        phase2(tinier, g)


def test_conflicting_addresses_name_their_constraint_family(gemm):
    """Pinning both loads to the same scratchpad rows cannot be allocated; the core
    names the groups involved."""
    _, g = gemm
    t = target("gemmini")
    order = heuristic_order(g, t)
    loads = _instr(g, "mvin")
    base = t.instructions["mvin"]

    class Pinned(base):
        @staticmethod
        def e(a, x=None):
            x = x or __import__("runtime_skeleton.symbolic", fromlist=["PY"]).PY
            return x.and_(base.e(a, x), a["sp_addr"] == 0)

    pinned = dataclasses.replace(t, instructions={**t.instructions, "mvin": Pinned})
    with pytest.raises(AllocationFailed) as err:
        allocate(pinned, g, order)
    families = {f for f, _ in err.value.core}
    assert "CSP4" in families and "CSP1" in families, err.value.core
    assert len(loads) == 2
    assert not err.value.order_independent  # CSP4 is in the conflict: another order may do
    # for the later orders of a pii graph only the buffer whose overlaps conflict is named
    with pytest.raises(AllocationFailed) as quick:
        allocate(pinned, g, order, explain=False)
    assert quick.value.core == [("CSP4", "sp")] and not quick.value.order_independent


def test_cp_sat_algebra_reifies_or_and_not():
    m = cp_model.CpModel()
    x = m.new_int_var(0, 10, "x")
    alg = CpSatAlgebra(m)
    alg.require(alg.or_(x == 3, x == 7))
    alg.require(alg.not_(x == 3))
    alg.require(alg.mod(x, 4) == 3)
    s = cp_model.CpSolver()
    assert s.solve(m) == cp_model.OPTIMAL and s.value(x) == 7
    alg.require(alg.and_(True, x <= 5))
    assert cp_model.CpSolver().solve(m) == cp_model.INFEASIBLE


COLUMN_TILES = """HloModule cols
ENTRY main {
  a = s8[16,16]{1,0} parameter(0)
  b = s8[16,32]{1,0} parameter(1)
  ROOT d = s32[16,32]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def test_a_slice_read_later_keeps_only_its_bytes_live():
    """s32[16,32] on Gemmini is two 16x16 column tiles stored with stride 128: the second
    mvout rewrites bytes 64.. of the first store's region in place (read-modify-write)
    while bytes 0..63 (the first tile's first row) are still to be read as part of the
    output. With the whole first store live, no allocation exists."""
    from runtime_skeleton.compile import CompileOptions, compile_hlo, verify
    from runtime_skeleton.hlo import parse_module

    t = target("gemmini")
    sel = InstructionSelector(t, parse_module(COLUMN_TILES, "<cols>"))
    g = next(g for g in sel.pii_graphs() if len(_instr(g, "mvout_acc32")) == 2)
    order = heuristic_order(g, t)
    ranges = live_ranges(g, order)
    first = min(_instr(g, "mvout_acc32"), key=order.index)
    kept = [v for v in ranges if g.nodes[v].op == "slice^H"]
    assert kept and all(g.nodes[v].args == (first,) for v in kept)
    assert ranges[first].end < len(order)
    res = compile_hlo(t, COLUMN_TILES, CompileOptions(timeout=60, tiling=False, deterministic=True))
    assert verify(t, res) == []
