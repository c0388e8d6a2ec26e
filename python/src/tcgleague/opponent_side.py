"""The opponent side: who plays the rows that are not the learner's, as the trainer sees it.

The trainer's collect loop talks to one `OpponentSide`; plain self-play and the league
(`league.opponents.LeagueOpponents`) are two implementations, so the loop has no league branches:

    mine, theirs = side.split(rows)                  # learner rows it trains on / opponent rows
    rest, companion = side.plan(rows, theirs)        # who decides in the learner's device step
    d = learner.decide(obs[rows], rows, companion=companion)   # d.played: the learner's + the companion's
    actions[rest] = side.act(obs, rest)              # the others (Actor interface)
    obs, rewards, terminals, truncations, infos = env.step(actions)
    mask = side.after_step(rewards, terminals, truncations, infos, global_step)   # learner mask in force
    ...
    side.finish_collect(obs, theirs)                                       # its deciding rows at the epoch's end
    side.end_epoch(epoch, global_step, policy, sampler)                    # once per epoch
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from .actors import Companion
from .policy.family import Sampler
from .rows import RowFormat


@dataclass(frozen=True)
class Origin:
    """Where a resumed state was saved. The files it names (league members) are stored relative
    to the checkpoint's run directory, so a run directory copied to another path or machine
    resumes from its new place."""

    checkpoint: Path
    allow_missing_members: bool = False  # drop members whose files are gone (warned) rather than refuse
    global_step: int = 0  # the checkpoint's: the league's event log continues from there

    @property
    def run_dir(self) -> Path:
        return self.checkpoint.parent


class OpponentSide(Protocol):
    def start(self, global_step: int) -> None:
        """Every game starts now (right after env.reset)."""

    def split(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(learner rows, opponent rows) among the deciding `rows`. A row in neither is played by
        the learner and not trained on (the league's: its seat against the live exploiter)."""

    def plan(self, rows: np.ndarray, theirs: np.ndarray) -> tuple[np.ndarray, Companion | None]:
        """Before the learner decides for the deciding `rows`: which of the opponent rows `theirs`
        a companion decides for in the learner's own device step (the league's frozen pool),
        planned for this batch. Returns (the rows left for `act`, the companion or None)."""

    def act(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """int32 [len(rows), 4] actions for opponent `rows`."""

    def after_step(
        self, rewards: np.ndarray, terminals: np.ndarray, truncations: np.ndarray, infos: list[dict], global_step: int
    ) -> np.ndarray:
        """Handles the step's rewards of rows that learn on the opponent side (the league's
        exploiter) and finished games (`infos`: the env's records of them, in game order);
        returns the learner-row mask that was in force for the step."""

    def finish_collect(self, obs: np.ndarray, rows: np.ndarray) -> None:
        """The epoch's collection ends with `rows` deciding on `obs` (pending steps to bootstrap)."""

    def end_epoch(self, epoch: int, global_step: int, policy: torch.nn.Module, sampler: Sampler) -> None:
        """Once per epoch, after the update (the league ingests and evaluates candidates here)."""

    def metrics(self) -> dict[str, float]: ...

    def state_dict(self) -> dict | None: ...

    def load_state_dict(self, state: dict | None, exact: bool, log=print, origin: Origin | None = None) -> None:
        """Restores `state_dict()`; `exact` when the env's running games were restored too;
        `origin`: where the state was saved (None: by this run)."""

    def checkpointed(self) -> None:
        """A checkpoint holding this side's `state_dict()` as it is now is on disk: files only
        older states named may go."""

    def evaluate_deliverable(self) -> dict[str, float]:
        """eval/* figures of what the run delivers besides its learner (the league's Nash
        mixture), at the trainer's evaluations; {} when it delivers the learner alone."""


class SelfPlay:
    """Both seats of every game are the learner: no opponent rows, nothing to remember."""

    def __init__(self, rows: RowFormat):
        self.all_learner = np.ones(rows.num_rows, dtype=bool)
        self.action_width = rows.action_width

    def start(self, global_step: int) -> None:
        pass

    def split(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return rows, rows[:0]

    def plan(self, rows: np.ndarray, theirs: np.ndarray) -> tuple[np.ndarray, None]:
        return theirs, None

    def act(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return np.zeros((len(rows), self.action_width), dtype=np.int32)

    def after_step(self, rewards, terminals, truncations, infos, global_step: int) -> np.ndarray:
        return self.all_learner

    def finish_collect(self, obs, rows) -> None:
        pass

    def end_epoch(self, epoch, global_step, policy, sampler) -> None:
        pass

    def metrics(self) -> dict[str, float]:
        return {}

    def state_dict(self) -> None:
        return None

    def load_state_dict(self, state: dict | None, exact: bool, log=print, origin: Origin | None = None) -> None:
        if state is not None:
            log("[resume] note: the checkpoint has league state but [league] enable is false: ignored")

    def checkpointed(self) -> None:
        pass

    def evaluate_deliverable(self) -> dict[str, float]:
        return {}
