"""`actgen`: generate a backend package from an ISA description.

    actgen FILE.isa -o DIR     check FILE.isa and write the backend package to DIR
    actgen check FILE.isa      only check FILE.isa
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys

from runtime_skeleton.cli_util import add_common_flags, run_cli
from runtime_skeleton.errors import ActgenError, read_source

from .facts import FACTS_FILE, derived_facts
from .render import FILES, HEADER_MARK, render

USAGE = """actgen FILE.isa -o DIR      generate the backend package for FILE.isa into DIR
       actgen check FILE.isa       check FILE.isa only"""


def _source_label(path: pathlib.Path) -> str:
    """The path as recorded in generated headers: relative to the working
    directory when inside it, so output does not depend on where a checkout lives."""
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else str(path)


def load(path: str) -> tuple:
    from isa_lang.checker import check
    from isa_lang.errors import IsaError
    from isa_lang.parser import parse_text

    p = pathlib.Path(path)
    if not p.exists():
        raise ActgenError(f"{path}: no such file")
    if p.is_dir():
        raise ActgenError(f"{path}: is a directory, not a .isa file")
    label = _source_label(p)
    text = read_source(p, IsaError, label)
    return check(parse_text(text, label)), label, text


def is_actgen_output(d: pathlib.Path) -> bool:
    init = d / "__init__.py"
    return init.is_file() and init.read_text().startswith(HEADER_MARK)


def write_package(files: dict[str, str], out: pathlib.Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise ActgenError(f"{out}: exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not is_actgen_output(out) and not force:
        raise ActgenError(f"{out}: directory is not empty and is not an earlier actgen output; refusing to "
                          f"overwrite it (choose another -o, or pass --force)")
    out.mkdir(parents=True, exist_ok=True)
    for name in FILES + (FACTS_FILE,):
        stale = out / name
        if stale.is_file() and stale.read_text().startswith(HEADER_MARK):
            stale.unlink()
    for name, content in files.items():
        (out / name).write_text(content)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv

    def run(args: list[str]) -> int:
        if args and args[0] == "check":
            ap = argparse.ArgumentParser(prog="actgen check", description="Check an ISA description.")
            add_common_flags(ap)
            ap.add_argument("isa", help="the .isa file")
            ns = ap.parse_args(args[1:])
            spec, label, text = load(ns.isa)
            derived_facts(render(spec, label, text), spec.name)  # what the compiler derives must derive
            n = len(spec.instructions)
            print(f"{ns.isa}: ok: target {spec.name}, {len(spec.all_buffers)} buffers, {n} instructions")
            return 0
        ap = argparse.ArgumentParser(
            prog="actgen", usage=USAGE,
            description="Generate a compiler backend (simulator, tables, CLI) for a tensor accelerator from "
                        "its ISA description.",
            epilog="The generated package runs as `python -m <package> --help`.")
        add_common_flags(ap)
        ap.add_argument("isa", help="the .isa file")
        ap.add_argument("-o", "--output", required=True, help="directory of the generated package")
        ap.add_argument("--force", action="store_true", help="write into a non-empty directory that is not an "
                        "earlier actgen output")
        ns = ap.parse_args(args)
        spec, label, text = load(ns.isa)
        out = pathlib.Path(ns.output)
        files = render(spec, label, text)
        files[FACTS_FILE] = derived_facts(files, spec.name)
        write_package(files, out, ns.force)
        print(f"{ns.isa}: generated backend for {spec.name} ({len(spec.instructions)} instructions) in {out}")
        return 0

    return run_cli(run, argv)
