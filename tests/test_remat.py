"""Rematerialization (runtime_skeleton.alloc.remat): a value in an overflowing buffer is
computed again for each user after the first, from the same operands."""
from __future__ import annotations

from runtime_skeleton.alloc.remat import rematerialized
from runtime_skeleton.ir.dtypes import dtype
from runtime_skeleton.ir.types import TensorType
from runtime_skeleton.isel.extract import PiiGraph, PiiNode
from tests.test_isel import target

S8, S32 = TensorType(dtype("s8"), (16, 16)), TensorType(dtype("s32"), (16, 16))


def node(kind, op, buffer, t, *args):
    return PiiNode(kind, op, buffer, t, {"buffer": buffer}, tuple(args), 0)


def test_a_preloaded_matrix_used_twice_is_preloaded_for_each_use():
    g = PiiGraph([
        node("input", "input", "d0", S8),                 # 0
        node("pii", "mvin", "sp", S8, 0),                 # 1
        node("pii", "preload_ws", "ws", S8, 1),           # 2: used by 3 and 4
        node("pii", "compute_ws", "acc", S32, 1, 2),      # 3
        node("pii", "compute_ws", "acc", S32, 1, 2),      # 4
    ], outputs=[3, 4])
    again = rematerialized(target("gemmini"), g, "ws")
    ops = [n.op for n in again.nodes]
    assert ops == ["input", "mvin", "preload_ws", "compute_ws", "preload_ws", "compute_ws"]
    assert again.nodes[3].args == (1, 2) and again.nodes[5].args == (1, 4) and again.nodes[4].args == (1,)
    assert again.outputs == [3, 5]
    assert rematerialized(target("gemmini"), g, "acc") is None  # each value there has one user
