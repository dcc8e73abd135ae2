"""docs/new-target.md cannot rot: its listings are the shipped files, and its commands,
run in a scratch copy of the tutorial's folder, print what the tutorial shows.

The tutorial writes `examples/tutorial/tmu.isa`, generates its backend into
`generated/tmu` and compiles and runs a kernel exported from JAX. Here every ```console
block of the tutorial is run in order, in a folder of tmp_path laid out like the
repository (`examples/tutorial/` copied, an empty `generated/` package), so the generated
packages are imported from tmp_path, never from the repository's `generated/`. The
tutorial's scratch folder `/tmp/tmu` becomes a folder of tmp_path. A command passes when it
exits with status 0 and prints the lines the tutorial shows: a line `...` stands for any
lines, a line ending in `...` for any line that starts the same, and times in seconds
(`0.13s`, `2.425 s`) are not compared.
"""
from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "new-target.md"
TUTORIAL = ROOT / "examples" / "tutorial"
SCRATCH = "/tmp/tmu"  # the tutorial's scratch folder
NEEDS_JAX = "python examples/tutorial/export_kernels.py"  # run by test_export_script only

FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)
MARKER = re.compile(r"<!-- (file|from): (\S+) -->\n```\w*\n(.*?)^```\n", re.S | re.M)
SECONDS = re.compile(r"\b\d+(\.\d+)? ?s\b")


def doc() -> str:
    return DOC.read_text(encoding="utf-8")


def console_blocks(text: str) -> list[list[tuple[str, list[str]]]]:
    """Each ```console block as a list of (command, output lines)."""
    blocks = []
    for m in FENCE.finditer(text):
        if m.group(1) != "console":
            continue
        steps: list[tuple[str, list[str]]] = []
        for line in m.group(2).splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                assert steps, f"console block starts with output, not a command: {line!r}"
                steps[-1][1].append(line)
        blocks.append(steps)
    return blocks


def _norm(line: str) -> str:
    return SECONDS.sub("<t>s", line.rstrip())


def matches(shown: list[str], actual: list[str]) -> bool:
    """Whether the output lines the tutorial shows match the actual ones (see the module doc)."""
    shown = [_norm(s) for s in shown]
    actual = [_norm(a) for a in actual]

    def go(i: int, j: int) -> bool:
        if i == len(shown):
            return j == len(actual)
        if shown[i] == "...":
            return any(go(i + 1, k) for k in range(j, len(actual) + 1))
        if j == len(actual):
            return False
        s, a = shown[i], actual[j]
        ok = a.startswith(s[:-3]) if s.endswith("...") else a == s
        return ok and go(i + 1, j + 1)

    return go(0, 0)


def sandbox(tmp: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path, dict[str, str]]:
    """A folder laid out like the repository, a scratch folder, and the environment to run in."""
    repo, scratch = tmp / "repo", tmp / "scratch"
    shutil.copytree(TUTORIAL, repo / "examples" / "tutorial",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "generated").mkdir()
    (repo / "generated" / "__init__.py").write_text('"""Backends generated in the tutorial."""\n')
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "PYTHONPATH")}
    env.update(PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""),
               PYTHONPATH=str(repo), NO_COLOR="1", COLUMNS="80")
    return repo, scratch, env


def run(command: str, repo: pathlib.Path, scratch: pathlib.Path, env: dict[str, str]) -> tuple[int, list[str]]:
    """Run one command of the tutorial; its output with the scratch folder named as the tutorial names it."""
    r = subprocess.run(["bash", "-c", command.replace(SCRATCH, str(scratch))], cwd=repo, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    return r.returncode, r.stdout.replace(str(scratch), SCRATCH).splitlines()


def test_listings_are_the_shipped_files():
    """A block after `<!-- file: PATH -->` is PATH byte for byte; after `<!-- from: PATH -->`, a part of it."""
    found = MARKER.findall(doc())
    assert any(kind == "file" and path == "examples/tutorial/tmu.isa" for kind, path, _ in found)
    for kind, path, body in found:
        text = (ROOT / path).read_text(encoding="utf-8")
        if kind == "file":
            assert body == text, f"the listing of {path} in {DOC.name} differs from the file"
        else:
            assert body in text, f"a part of {path} shown in {DOC.name} is not in the file:\n{body}"


def test_tutorial_commands(tmp_path):
    """Every command of the tutorial, in order: generate, check, compile with --verify, run against the reference."""
    repo, scratch, env = sandbox(tmp_path)
    blocks = console_blocks(doc())
    commands = [cmd for block in blocks for cmd, _ in block]
    # The steps that make the tutorial what it is must be there.
    for needed in ("actgen check examples/tutorial/tmu.isa",
                   "actgen examples/tutorial/tmu.isa -o generated/tmu",
                   "python -m generated.tmu info",
                   f"python -m generated.tmu compile examples/tutorial/matmul_bias_relu.hlo -o {SCRATCH}/"
                   "matmul_bias_relu.s --verify",
                   f"python -m generated.tmu run {SCRATCH}/matmul_bias_relu.s --random 0 -o {SCRATCH}/out.npz "
                   "--expect examples/tutorial/matmul_bias_relu.hlo"):
        assert needed in commands, f"the tutorial no longer runs `{needed}`"
    for block in blocks:
        for cmd, shown in block:
            if cmd.startswith(NEEDS_JAX):
                continue
            rc, out = run(cmd, repo, scratch, env)
            assert rc == 0, f"`{cmd}` exited with {rc}:\n" + "\n".join(out)
            assert matches(shown, out), (f"`{cmd}` printed\n" + "\n".join(out)
                                         + "\n\nbut the tutorial shows\n" + "\n".join(shown))
            if cmd.startswith("actgen examples/tutorial/tmu.isa -o"):
                # From here on, `generated.tmu` must be the package just generated in tmp_path.
                rc, out = run("python -c 'import generated.tmu as m; print(m.__file__)'", repo, scratch, env)
                assert rc == 0 and pathlib.Path(out[-1]).is_relative_to(repo / "generated" / "tmu"), out


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax")
def test_export_script(tmp_path):
    """The export script writes the kernels the tutorial ships (the same text under the JAX that made them)."""
    import jax

    repo, scratch, env = sandbox(tmp_path)
    for name in ("matmul_bias_relu", "matmul_f32", "matmul_16x16"):
        (repo / "examples" / "tutorial" / f"{name}.hlo").unlink()
    assert any(cmd == NEEDS_JAX for block in console_blocks(doc()) for cmd, _ in block)
    rc, out = run(NEEDS_JAX, repo, scratch, env)
    assert rc == 0, "\n".join(out)
    for name in ("matmul_bias_relu", "matmul_f32", "matmul_16x16"):
        made = (repo / "examples" / "tutorial" / f"{name}.hlo").read_text()
        assert made.startswith(f"HloModule jit_{name}")
        if jax.__version__ == "0.10.2":  # the HLO text depends on the JAX version
            assert made == (TUTORIAL / f"{name}.hlo").read_text()
