import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
KERNELS = ROOT / "examples" / "kernels"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _private_capability_cache(tmp_path_factory):
    """Fuzz capability probes (some with a faked compiler) are cached in a folder of the
    test session's, never in the user's cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv("ACTGEN_CACHE", str(tmp_path_factory.mktemp("actgen-cache")))
    yield
    mp.undo()


@pytest.fixture()
def loops_only(monkeypatch):
    """Kernels of a few tiles per dimension compile as straight-line code (cheaper on the
    shipped targets: a 32x32x32 Gemmini GEMM 588 cycles against 652 in loops); a test of
    the loop nests themselves turns the straight-line attempt off."""
    import runtime_skeleton.superopt.tiled as tiled

    monkeypatch.setattr(tiled, "MAX_DIRECT_BLOCKS", 0)
