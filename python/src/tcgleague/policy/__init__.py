"""The contract every game's policy and sampler keep (`family`), the action sampling they share
(`sampling`), and the flat family a game of one small action space uses (`flat`). A game's own
family lives with the game (Emberfront's: games/emberfront/policy.py and sampler.py)."""

from .sampling import PARAM_NAMES

__all__ = ["PARAM_NAMES"]
