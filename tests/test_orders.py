"""Phase 2's orders: the Sethi–Ullman need, prefixes that fail alike, repairs of an overflow,
and what extraction shares with an instruction that overwrites its operand in place."""
import importlib
import pathlib

from runtime_skeleton.alloc import heuristic_order, phase2, topological_orders
from runtime_skeleton.alloc.liveness import producers
from runtime_skeleton.alloc.order import _need, serialized
from runtime_skeleton.hlo import parse_file
from runtime_skeleton.ir.dtypes import dtype
from runtime_skeleton.ir.types import TensorType
from runtime_skeleton.isel.extract import PiiGraph, PiiNode
from runtime_skeleton.isel.phase1 import InstructionSelector, Limits

ROOT = pathlib.Path(__file__).resolve().parent.parent


def target(name):
    return importlib.import_module(f"generated.{name}").TARGET


def test_the_need_counts_what_operands_evaluated_first_needed():
    """Two operands, one needing 256 bytes of a buffer while it is evaluated and the other
    none: evaluating them needs 256 whatever the order (Appendix C.4's min over τ said 0)."""
    esun, mem = {1: 256, 2: 0}, {1: 0, 2: 0}
    assert _need([1, 2], esun.__getitem__, mem.__getitem__) == 256
    # Sethi–Ullman proper: two subtrees of need 2 holding 1 each need 3; needs 3 and 1 need 3
    esun, mem = {1: 2, 2: 2, 3: 3, 4: 1}, {1: 1, 2: 1, 3: 1, 4: 1}
    assert _need([1, 2], esun.__getitem__, mem.__getitem__) == 3
    assert _need([3, 4], esun.__getitem__, mem.__getitem__) == 3


def _toy() -> PiiGraph:
    """Two preloads into a one-matrix buffer, each read by one matmul: p1 p2 c1 c2."""
    w, a = TensorType(dtype("s8"), (16, 16)), TensorType(dtype("s32"), (16, 16))
    nodes = [PiiNode("input", "input", "d0", w, {"index": 0}, (), 0),
             PiiNode("pii", "preload_ws", "ws", w, {}, (0,), 1),
             PiiNode("pii", "preload_ws", "ws", w, {}, (0,), 2),
             PiiNode("pii", "compute_ws", "acc", a, {}, (1,), 3),
             PiiNode("pii", "compute_ws", "acc", a, {}, (2,), 4),
             PiiNode("pii", "concat^H", "acc", TensorType(dtype("s32"), (32, 16)), {"dimensions": (0,)}, (3, 4), 5)]
    return PiiGraph(nodes, [5])


def test_an_overflow_is_repaired_by_waiting_for_the_readers_of_the_other_values():
    g = _toy()
    after: dict[int, set[int]] = {}
    assert serialized(g, [1, 2, 3, 4], (1, 2), after) == [1, 3, 2, 4]
    assert after == {2: {3}}
    # a value read after the other is made cannot wait for it: the other one waits instead
    assert serialized(g, [2, 1, 4, 3], (1, 2), {}) == [2, 4, 1, 3]
    # an output lives to the end: the other value waits for it
    assert serialized(PiiGraph(g.nodes, [3, 1]), [1, 2, 3, 4], (1, 2), {}) == [2, 4, 1, 3]
    assert serialized(PiiGraph(g.nodes, [1, 2]), [1, 2, 3, 4], (1, 2), {}) is None


def test_orders_beginning_with_a_doomed_prefix_are_skipped():
    t = target("gemmini")
    g = InstructionSelector(t, parse_file(ROOT / "examples/kernels/gemmini_gemm.hlo")).first()
    every = list(topological_orders(g, t, [], limit=200))
    assert len({o[0] for o in every}) > 1
    doomed: set[tuple[int, ...]] = set()
    orders = topological_orders(g, t, [], limit=200, doomed=doomed)
    first = next(orders)
    assert first == heuristic_order(g, t)
    doomed.add(tuple(first[:1]))
    rest = list(orders)
    assert rest and all(o[0] != first[0] for o in rest)


def test_no_part_of_an_operand_overwritten_in_place_is_read_by_another_instruction():
    """Fuzz kernel 90046 sums s32 rows in Gemmini's accumulator: a row is stored to HBM and
    also part of a 16-row block that a broadcast add updates in place. Extraction shared
    the row between both, so the store had to read it after it was overwritten: no order
    allocated any pii graph. The parts of a concatenation overwritten in place are copies."""
    t = target("gemmini")
    sel = InstructionSelector(t, parse_file(ROOT / "tests/data/gemmini_fuzz90046_in_place_rows.hlo"),
                              Limits(tiles_first=True, timeout=60))
    g = sel.first()
    readers: dict[int, set[int]] = {}
    for y, n in enumerate(g.nodes):
        if n.is_instruction:
            for p in producers(g, y):
                readers.setdefault(p, set()).add(y)
    in_place = [y for y, n in enumerate(g.nodes) if n.is_instruction and t.instructions[n.op].alias is not None]
    assert in_place
    for y in in_place:
        x = g.nodes[y].args[t.instructions[g.nodes[y].op].alias]
        if g.nodes[x].op == "concat^H":
            assert all(readers[p] == {y} for p in producers(g, x)), y
    assert phase2(t, g).orders_tried >= 1


def test_a_failed_pair_prunes_every_prefix_where_both_are_made_and_still_to_be_read():
    t = target("gemmini")
    g = _toy()
    every = list(topological_orders(g, t, [], limit=100))
    assert any(o[:2] in ([1, 2], [2, 1]) for o in every)
    failed = [frozenset({(1, 2)})]
    assert all(o[:2] not in ([1, 2], [2, 1]) for o in topological_orders(g, t, failed, limit=100))


def test_a_slice_of_a_concatenation_becomes_the_parts_it_covers():
    from runtime_skeleton.alloc.views import simplified
    from runtime_skeleton.ir.attrs import SliceDim

    u8 = dtype("u8")
    nodes = [PiiNode("input", "input", "d0", TensorType(u8, (64,)), {"index": 0}, (), 0),
             PiiNode("const", "const", "d0", TensorType(u8, (64,)), {}, (), 1),
             PiiNode("undef", "undef", "d0", TensorType(u8, (64,)), {}, (), 2),
             PiiNode("pii", "concat^H", "d0", TensorType(u8, (192,)), {"dimensions": (0,)}, (0, 2, 1), 3),
             PiiNode("pii", "slice^H", "d0", TensorType(u8, (96,)), {"slice": (SliceDim(16, 112, 1),)}, (3,), 4)]
    g = simplified(PiiGraph(nodes, [4]))
    out = g.nodes[g.outputs[0]]
    assert out.op == "concat^H" and out.type.shape == (96,)
    first, second = (g.nodes[a] for a in out.args)
    assert first.op == "slice^H" and first.attrs["slice"] == (SliceDim(16, 64, 1),) and g.nodes[first.args[0]].kind == "input"
    assert second.kind == "undef" and second.type.shape == (64,) or second.op == "slice^H"
    assert not any(n.kind == "const" for n in g.nodes)  # nothing reads the constant any more


COLUMN_TILES_ADD = """HloModule cols_add
ENTRY main {
  a = s32[16,32]{1,0} parameter(0)
  b = s32[16,32]{1,0} parameter(1)
  ROOT d = s32[16,32]{1,0} add(a, b)
}
"""


def test_a_sum_of_two_column_tiles_compiles_on_gemmini():
    """Each column tile's store writes over the bytes the store before it wrote (in place),
    so those stores are parts of the output, not scratch to keep apart from it."""
    from runtime_skeleton.compile import CompileOptions, compile_hlo, verify

    t = target("gemmini")
    res = compile_hlo(t, COLUMN_TILES_ADD, CompileOptions(timeout=60, tiling=False, deterministic=True))
    assert verify(t, res) == []


def test_the_enumeration_ends_after_a_run_of_orders_it_already_knows(monkeypatch):
    """Six independent loads have 720 orders; when every one is pruned (their common
    interference graph failed), the enumeration gives up after
    ``known_run`` of them in a row instead of computing φ for all 720 (a pii graph that
    allocated in no order spent a second there)."""
    import runtime_skeleton.alloc.order as order_mod

    w = TensorType(dtype("s8"), (16, 16))
    nodes = [PiiNode("input", "input", "d0", w, {"index": 0}, (), 0)]
    nodes += [PiiNode("pii", "mvin", "sp", w, {}, (0,), k) for k in range(1, 7)]
    nodes.append(PiiNode("pii", "concat^H", "sp", TensorType(dtype("s8"), (96, 16)), {"dimensions": (0,)},
                         tuple(range(1, 7)), 7))
    g = PiiGraph(nodes, [7])
    t = target("gemmini")
    assert len(list(topological_orders(g, t, [], known_run=10_000))) == 1  # all 720 share one φ
    phi = order_mod.interference(g, order_mod.live_ranges(g, heuristic_order(g, t)))
    assert len(phi) > order_mod.SMALL_FAILURE  # not checked on prefixes: each order gets its φ
    computed = []
    real = order_mod.interference
    monkeypatch.setattr(order_mod, "interference", lambda *a: computed.append(1) or real(*a))
    assert list(topological_orders(g, t, [phi], known_run=20)) == []
    assert len(computed) == 20
    computed.clear()
    assert list(topological_orders(g, t, [phi], known_run=10_000)) == []
    assert len(computed) == 720
