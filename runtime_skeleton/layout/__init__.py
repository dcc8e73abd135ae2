"""Layouts (after Axe): logical coordinates to named physical axes (``axe``), and
XLA layouts as such maps onto bytes (``flatten``: bflat and its inverse)."""
from .axe import Iter, Layout, LayoutError, compose, direct_sum, identity, inverse, tile
from .flatten import Storage, bflat, byte_size, storage, unbflat

__all__ = ["Iter", "Layout", "LayoutError", "Storage", "bflat", "byte_size", "compose", "direct_sum", "identity",
           "inverse", "storage", "tile", "unbflat"]
