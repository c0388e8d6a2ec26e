"""tcgleague: league RL training for the Emberfront trading card game."""

__version__ = "0.1.0"
