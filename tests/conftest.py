import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
KERNELS = ROOT / "examples" / "kernels"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
