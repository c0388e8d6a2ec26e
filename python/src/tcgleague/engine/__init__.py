"""The Emberfront C engine: its binding, the layout it exports, and its card data.

Python never hard-codes an offset, size or enum value: everything comes from `LAYOUT`,
which the C binding builds from tcg.h.
"""

from ._tcg import Engine
from ._tcg import layout as _layout

LAYOUT: dict = _layout()

__all__ = ["Engine", "LAYOUT"]
