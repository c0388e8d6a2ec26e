"""The league under torchrun: one owner, replicas everywhere else.

Rank 0's manager owns the pool (members, payoff, ratings, promotions, candidate matches, the
state file). Once per epoch its state and the weights of members the other ranks do not hold yet
are broadcast; the other ranks keep a replica (weights in memory, no files), from which their own
matchmakers draw. In a single process every call here is a no-op or a plain local call."""

from __future__ import annotations

from ..checkpoint import CheckpointError, FieldError
from ..checkpoint.league_fields import league_field
from ..dist import Dist
from ..opponent_side import Origin
from .manager import LeagueManager


class PoolReplication:
    """Keeps every rank's manager equal to rank 0's."""

    def __init__(self, manager: LeagueManager, dist: Dist):
        self.manager, self.dist = manager, dist
        self.sent: set[str] = set()  # rank 0: members whose weights the replicas already hold

    def share(self) -> None:
        """Rank 0's manager -> every other rank's replica: its state and the weights of members
        the replicas do not hold yet."""
        if not self.dist.enabled:
            return
        snapshot = self.dist.broadcast(self.manager.snapshot(self.sent) if self.dist.is_main else None)
        if self.dist.is_main:
            self.sent = set(self.manager.pool_ids()) | set(self.manager.store.retired)
        else:
            self.manager.replicate(snapshot)

    def restore(self, state: dict, origin: Origin | None = None) -> None:
        """A resume: rank 0 loads the checkpoint's pool, ratings and payoff (and rewrites its state
        file; a malformed part or a missing member is refused on every rank), then every rank
        receives them."""
        self.dist.from_main(lambda: self.load_manager(state, origin), refusals=(FieldError, CheckpointError))
        self.sent = set()  # a resumed job's replicas hold no weights yet
        self.share()

    def load_manager(self, state: dict, origin: Origin | None) -> None:
        with league_field("manager"):
            self.manager.load_state_dict(state["manager"], origin)
        if self.manager.directory is not None:
            self.manager.save()
