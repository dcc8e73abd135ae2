"""The status line of a long compilation: it shows the compiler's notes and changes nothing."""
import pathlib

from runtime_skeleton import progress
from runtime_skeleton.compile import CompileOptions, compile_hlo

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_notes_reach_the_display_and_change_nothing(monkeypatch):
    from generated import gemmini

    kernel = ROOT / "examples/kernels/gemmini_ab_plus_c.hlo"
    opts = CompileOptions(timeout=20)
    quiet = compile_hlo(gemmini.TARGET, kernel, opts).text
    seen: list[str] = []
    monkeypatch.setattr(progress, "_listener", seen.append)
    assert compile_hlo(gemmini.TARGET, kernel, opts).text == quiet
    assert any(s.startswith("straight-line (option 1 of") for s in seen)
    assert any(", candidate 1, cost" in s for s in seen)


def test_the_display_ends_with_its_block(capsys):
    with progress.shown("compiling k", enabled=True):
        progress.note("straight-line")
        progress.note("candidate 1", step=True)
    assert progress._listener is None and progress._context == ""
    progress.note("nobody listens")  # no display: nothing happens


def test_the_log_shows_each_strategy_and_how_it_ended_and_changes_nothing(capsys):
    from generated import gemmini

    kernel = ROOT / "examples/kernels/gemmini_ab_plus_c.hlo"
    opts = CompileOptions(timeout=20, deterministic=True)
    quiet = compile_hlo(gemmini.TARGET, kernel, opts).text
    capsys.readouterr()
    with progress.logged():
        assert compile_hlo(gemmini.TARGET, kernel, opts).text == quiet
    lines = capsys.readouterr().err.splitlines()
    assert lines and all(line.startswith("[") and "] " in line for line in lines)
    assert any("straight-line (option 1 of" in line for line in lines)
    assert any("straight-line: cost" in line for line in lines)
    assert not any("candidate" in line for line in lines)  # the steps stay on the status line
    assert progress._logger is None


def test_a_long_decision_is_one_short_line(capsys):
    with progress.logged():
        progress.decided("x" * 5000 + "\nsecond line")
    (line,) = capsys.readouterr().err.splitlines()
    assert len(line) < progress.MAX_LOGGED + 20 and line.endswith("...")
    with progress.logged(False):
        progress.decided("not shown")
    assert capsys.readouterr().err == ""
