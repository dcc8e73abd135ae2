"""The shared superoptimization core (Axon, Trinity): kernels too large for one
straight-line program become loop nests whose body phases 1-2 compile."""
from .strip import NotTileable, Placement, Tiling, nest, strip, strip_dimension, tile_sizes

__all__ = ["NotTileable", "Placement", "Tiling", "nest", "strip", "strip_dimension", "tile_sizes"]
