"""Equal kernels within one compilation are compiled once (runtime_skeleton/memo.py)."""
from __future__ import annotations

import importlib

import pytest

from runtime_skeleton import budget, direct, memo
from runtime_skeleton.direct import CompileError, CompileOptions, compile_direct
from runtime_skeleton.hlo import parse_module

ADD = """HloModule k
ENTRY e {
  x = f32[1,16]{1,0} parameter(0)
  y = f32[1,16]{1,0} parameter(1)
  ROOT NAME = f32[1,16]{1,0} add(x, y)
}
"""


@pytest.fixture
def calls(monkeypatch):
    made = []
    real = direct._compile_direct

    def counted(*args):  # noqa: ANN002, ANN202
        made.append(args[1])
        return real(*args)

    monkeypatch.setattr(direct, "_compile_direct", counted)
    return made


def test_an_equal_kernel_its_names_aside_reuses_the_program(calls):
    amx = importlib.import_module("generated.amx").TARGET
    opts = CompileOptions(timeout=20)
    first, second = (parse_module(ADD.replace("NAME", n), "<k>") for n in ("s", "other"))
    with memo.scope():
        a = compile_direct(amx, first, opts, budget.after(20))
        b = compile_direct(amx, second, opts, budget.after(20))
    assert len(calls) == 1 and b.program == a.program and b.module is second
    compile_direct(amx, second, opts, budget.after(20))  # outside a compilation: nothing kept
    assert len(calls) == 2


def test_a_failure_is_raised_again_only_for_no_more_time(calls):
    """A kernel that found nothing in its time fails again at once with as little time, and is
    compiled again with more."""
    amx = importlib.import_module("generated.amx").TARGET
    kernel = parse_module(ADD.replace("NAME", "s"), "<k>")
    with memo.scope():
        with pytest.raises(CompileError):
            compile_direct(amx, kernel, CompileOptions(timeout=20), budget.after(0.0))
        with pytest.raises(CompileError):
            compile_direct(amx, kernel, CompileOptions(timeout=20), budget.after(0.0))
        assert len(calls) == 1
        compile_direct(amx, kernel, CompileOptions(timeout=20), budget.after(20))
        assert len(calls) == 2
