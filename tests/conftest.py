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
