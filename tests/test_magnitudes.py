"""The float check's error scale (reference.magnitudes) and verify's integer pass."""
import dataclasses

import numpy as np

from generated.amx import TARGET as AMX
from runtime_skeleton.compile import CompileOptions, compile_hlo, verify
from runtime_skeleton.hlo import parse_module
from runtime_skeleton.reference import evaluate
from runtime_skeleton.reference.compare import compare_outputs
from runtime_skeleton.reference.magnitudes import magnitudes
from runtime_skeleton.reference.npz_io import integer_inputs, random_inputs

HEAD = "HloModule m, entry_computation_layout={(f32[1,16]{1,0}, f32[1,16]{1,0})->f32[1,16]{1,0}}\n\n"


def _kernel(body: str) -> str:
    return HEAD + "ENTRY main {\n  x = f32[1,16]{1,0} parameter(0)\n  y = f32[1,16]{1,0} parameter(1)\n" + body + "}\n"


# (x * 4096 + y) - x * 4096: y, through values 4096 times larger
CANCELLING = _kernel("""  c = f32[] constant(4096)
  cb = f32[1,16]{1,0} broadcast(c), dimensions={}
  big = f32[1,16]{1,0} multiply(x, cb)
  s = f32[1,16]{1,0} add(big, y)
  ROOT r = f32[1,16]{1,0} subtract(s, big)
""")


def test_the_bound_follows_the_sums_not_the_result():
    m = parse_module(CANCELLING)
    x = random_inputs(m.parameter_types, 0)
    got = magnitudes(m, x)
    want = 2 * 4096 * np.abs(x[0]) + np.abs(x[1])
    np.testing.assert_allclose(got.outputs[0], want, rtol=1e-6)
    assert got.exact_ops and got.largest >= want.max() * 0.999
    # on inputs of small integers every value is exact: |x| * 4096 * 2 is far below 2^24
    assert magnitudes(m, integer_inputs(m.parameter_types, 0)).exact


def test_what_the_bound_does_not_follow_is_not_exact():
    divided = _kernel("  ROOT r = f32[1,16]{1,0} divide(x, y)\n")
    fraction = _kernel("""  c = f32[] constant(0.1)
  cb = f32[1,16]{1,0} broadcast(c), dimensions={}
  ROOT r = f32[1,16]{1,0} multiply(x, cb)
""")
    for text in (divided, fraction):
        m = parse_module(text)
        assert not magnitudes(m, integer_inputs(m.parameter_types, 0)).exact


def test_the_float_tolerance_scales_with_the_bound():
    m = parse_module(CANCELLING)
    x = random_inputs(m.parameter_types, 0)
    want = evaluate(m, x)
    off = [want[0] + np.float32(1e-3)]  # far below 2^-18 of the terms (~8e3), far above 2^-18 of y
    assert compare_outputs(off, want) != []
    assert compare_outputs(off, want, magnitudes(m, x).outputs) == []
    assert compare_outputs(off, want, exact=True) != []


def test_verify_catches_on_small_integers_what_the_tolerance_hides():
    """A program computing y + x * 2^-20 checked against the cancelling kernel (which is y):
    always within the random pass's tolerance of its 4096-fold terms, but not equal on
    integer inputs."""
    near = _kernel("""  c = f32[] constant(9.5367431640625e-07)
  cb = f32[1,16]{1,0} broadcast(c), dimensions={}
  tiny = f32[1,16]{1,0} multiply(x, cb)
  ROOT r = f32[1,16]{1,0} add(y, tiny)
""")
    res = compile_hlo(AMX, near, CompileOptions(timeout=20, deterministic=True))
    assert verify(AMX, res) == []
    wrong = verify(AMX, dataclasses.replace(res, module=parse_module(CANCELLING)))
    assert wrong and all(p.startswith("integer-valued inputs: ") for p in wrong)
