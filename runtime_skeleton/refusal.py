"""Why a compilation found no program, as data: what kind of refusal, about what, where.

A ``CompileError`` carries one (``CompileError.refusal``) next to its message, so tools
count refusals by field (``fuzz`` buckets them by ``category``) instead of parsing text.
"""
from __future__ import annotations

from dataclasses import dataclass

UNSUPPORTED = "unsupported"  # checked before any search: no instruction or rule reaches it (obstacles)
NO_PII_GRAPH = "no pii graph"  # phase 1: no choice of instructions produces some value where it is needed
ALLOCATION = "allocation"  # phase 2: pii graphs found, none allocated
EMPTY = "empty"  # a value without elements
TIMEOUT = "timeout"  # the wall-clock cap ended the compilation


@dataclass(frozen=True)
class Refusal:
    kind: str  # one of the constants above
    what: tuple[str, ...] = ()  # the operators (no pii graph, unsupported) or the constraint family (allocation)
    where: str = ""  # the buffer ("HBM" for main memory), or for unsupported the element types
    node: str = ""  # the kernel's node, or the value's type when phase 1 names no node
    limited: bool = False  # the search stopped at a time or size limit: more might find a program

    @property
    def category(self) -> str:
        """A short, stable bucket: the kind and what it is about, without numbers."""
        what = "/".join(self.what[:3])
        if self.kind == ALLOCATION:
            return f"allocation: {' '.join(x for x in (what, self.where) if x)}".rstrip(": ")
        if self.kind == NO_PII_GRAPH:
            return f"no pii graph: {what} in {self.where}" if what else "no pii graph: node bound"
        return f"{self.kind}: {what}" if what else self.kind
