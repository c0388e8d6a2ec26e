"""League training: a pool of frozen past selves and scripted bots as the learner's opponents.

matchmaking   who the learner plays in each game (PFSP), drawn at episode boundaries
frozen_pool   the loaded members' batched inference (one stacked forward per step)
members       the member store: ingest, files, load through the checkpoint module, retire
ratings       the decayed payoff matrix and the OpenSkill ratings
promotion     the promotion rule and pool retention
manager       the pool's owner: candidates, evaluation matches, the state file
opponents     the league as the trainer's opponent side: per-step row routing
epoch         the league's work at each epoch's end: results, the exploiter, candidates
replication   under torchrun, rank 0's manager replicated to the other ranks
exploiter     the main exploiter, a second learner
"""

from .manager import LeagueManager
from .opponents import LeagueOpponents

__all__ = ["LeagueManager", "LeagueOpponents"]
