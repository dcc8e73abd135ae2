"""Tokenizer for HLO text.

Tokens are deliberately fine-grained (``get-tuple-element.3`` is ``get`` ``-``
``tuple`` ``-`` ``element.3``) so that the same token stream serves names and
the integer expressions allowed in shapes (``bf16[n-1,64]``). The parser glues
tokens back together where HLO has no whitespace between them; every token
keeps its character offsets for that, and for error locations.

Comments (``/* ... */`` as XLA prints ``/*index=5*/``, and ``// ...``) are
skipped. Any other unexpected character becomes a one-character punctuation
token so that the parser reports it with context.
"""
from __future__ import annotations

import bisect
import re
from typing import NamedTuple

from ..errors import HloError, SourceLoc

IDENT = "ident"
NUMBER = "number"
STRING = "string"
PUNCT = "punct"
EOF = "eof"


class Token(NamedTuple):
    kind: str
    text: str
    start: int  # offset of the first character in Source.text
    end: int  # offset one past the last character

    def is_punct(self, text: str) -> bool:
        return self.kind == PUNCT and self.text == text

    def is_ident(self, text: str) -> bool:
        return self.kind == IDENT and self.text == text

    def describe(self) -> str:
        if self.kind == EOF:
            return "end of input"
        text = self.text.split("\n", 1)[0]
        if len(text) > 40 or text != self.text:
            text = text[:37] + "..."
        return f"'{text}'"


class Source:
    """The text being parsed and how its offsets map to ``file:line:col``.

    ``start_line``/``start_col`` place the first character of ``text`` inside an
    enclosing file (HLO embedded in an .isa file)."""

    def __init__(self, text: str, filename: str = "<string>", start_line: int = 1, start_col: int = 1):
        self.text = text
        self.filename = filename
        self.start_line = start_line
        self.start_col = start_col
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def loc(self, offset: int) -> SourceLoc:
        i = bisect.bisect_right(self._line_starts, offset) - 1
        col = offset - self._line_starts[i] + 1
        if i == 0:
            col += self.start_col - 1
        return SourceLoc(self.filename, self.start_line + i, col)

    def error(self, message: str, offset: int) -> HloError:
        return HloError(message, self.loc(offset))


_TOKEN = re.compile(
    r"""(?P<space>\s+)
    |(?P<comment>/\*.*?\*/|//[^\n]*)
    |(?P<open_comment>/\*)
    |(?P<ident>[A-Za-z_][A-Za-z0-9_.]*)
    |(?P<number>0[xX][0-9A-Fa-f]+|[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)
    |(?P<string>"(?:[^"\\]|\\.)*")
    |(?P<open_string>")
    |(?P<punct>->|.)""",
    re.S | re.X,
)
_KINDS = {"ident": IDENT, "number": NUMBER, "string": STRING, "punct": PUNCT}


def tokenize(src: Source, start: int = 0, end: int | None = None) -> list[Token]:
    """Tokens of ``src.text[start:end]``, ending with an EOF token at ``end``."""
    text = src.text
    end = len(text) if end is None else end
    tokens: list[Token] = []
    append, match = tokens.append, _TOKEN.match
    pos = start
    while pos < end:
        m = match(text, pos, end)
        group = m.lastgroup
        if group == "open_comment":
            raise src.error("unterminated comment '/*'", pos)
        if group == "open_string":
            raise src.error("unterminated string", pos)
        if group != "space" and group != "comment":
            append(Token(_KINDS[group], m.group(), pos, m.end()))
        pos = m.end()
    tokens.append(Token(EOF, "", end, end))
    return tokens
