"""The shared superoptimization core (Axon, Trinity): kernels too large for one
straight-line program become loop nests whose body phases 1-2 compile."""
from .strip import OUTPUT, NotTileable, Placement, Tiling, identity, strip, strip_dimension, tile_sizes

__all__ = ["OUTPUT", "NotTileable", "Placement", "Tiling", "identity", "strip", "strip_dimension", "tile_sizes"]
