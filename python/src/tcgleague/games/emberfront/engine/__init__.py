"""The Emberfront C engine: its binding, the layout it exports, and its card data.

Python never hard-codes an offset, size or enum value: everything comes from `LAYOUT`,
which the C binding builds from tcg.h.
"""

from ._tcg import Engine
from ._tcg import layout as _layout
from ._tcg import lookahead_status as _lookahead_status

LAYOUT: dict = _layout()
LOOKAHEAD_STATUS: dict = _lookahead_status()  # apart from LAYOUT, whose hash fingerprints checkpoints

__all__ = ["Engine", "LAYOUT", "LOOKAHEAD_STATUS"]
