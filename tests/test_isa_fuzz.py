"""Random damage to a valid description must give a located IsaError, never a traceback."""
import pathlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isa_lang.checker import check
from isa_lang.errors import IsaError
from isa_lang.parser import parse_text
from runtime_skeleton.errors import ActgenError

QKV = (pathlib.Path(__file__).resolve().parent.parent / "targets" / "qkv.isa").read_text()
TOKENS = ["(", ")", "{", "}", "[", "]", ":", ";", ",", "=", "*", "-", "+", "/", "%", "0", "1", "64", "n", "x1",
          "d0", "d9", "in", "out", "where", "engine", "semantics", "ROOT", "parameter(0)", "bf16[n, 64]", "u8[]",
          "instruction", "buffer", "#", "\n", " ", "<=", "==", "and", "not", "reshape(x1)", "latency"]


@st.composite
def mutated(draw):
    text = QKV
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["delete", "insert", "replace"]))
        i = draw(st.integers(0, len(text) - 1))
        j = min(len(text), i + draw(st.integers(1, 12)))
        tok = draw(st.sampled_from(TOKENS))
        if kind == "delete":
            text = text[:i] + text[j:]
        elif kind == "insert":
            text = text[:i] + tok + text[i:]
        else:
            text = text[:i] + tok + text[j:]
    return text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutations_give_located_errors(text):
    try:
        check(parse_text(text, "m.isa"))
    except IsaError as err:
        assert err.loc is not None and err.loc.file == "m.isa", str(err)
        assert err.loc.line >= 1 and err.loc.col >= 1
    except ActgenError as err:  # pragma: no cover - every user error must be an IsaError with a location
        raise AssertionError(f"not an IsaError: {err!r}") from err
