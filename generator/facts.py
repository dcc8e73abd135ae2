"""The ``facts.txt`` of a generated package: what the compiler derives from the description
(``runtime_skeleton.facts``), computed from the rendered ``target.py`` before anything is
written, so a description the compiler cannot derive facts from fails at ``actgen`` time."""
from __future__ import annotations

import types

FACTS_FILE = "facts.txt"


def derived_facts(files: dict[str, str], name: str) -> str:
    """The facts file for the rendered package ``files`` (its header is target.py's)."""
    from runtime_skeleton.facts import facts_text

    source = files["target.py"]
    module = types.ModuleType(f"actgen_facts_{name}")
    exec(compile(source, f"<generated target.py of {name}>", "exec"), module.__dict__)  # noqa: S102 - our own output
    header = "".join(line + "\n" for line in source.splitlines()[:2])
    return header + "# What the compiler derives from it; python -m <package> info --facts prints the same.\n\n" + \
        facts_text(module.TARGET)
