"""A candidate's evaluation in three steps, so that its matches can play while the learner trains:

    plan = manager.plan_evaluation(candidate, epoch)  # main thread: opponents chosen, sides loaded
    tallies = plan.play()                             # any thread: touches nothing the manager owns
    manager.apply_evaluation(plan, tallies)           # main thread: record, decide, retain

With `[league] evaluation = background` (devices.league_evaluation) the play step runs on one
worker thread (EvaluationWorker) during the next epoch, and is joined and applied at that
epoch's end (epoch.py): a decision lands exactly one epoch after its candidate, however long the
matches take, so seeded runs repeat. Every side is loaded when the plan is made, so the worker
never reads the member store, which the main thread changes (a retirement deletes files)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import torch

from ..checkpoint.league_fields import EVALUATION_ROLES
from ..scoring import Tally

CHAMPION, BASELINE, VERIFICATION, POPULATION = EVALUATION_ROLES


@dataclass(frozen=True)
class PlannedMatch:
    """One of a candidate's matches: what it decides (`role`), the opponent, and the match itself
    with both sides loaded (None: a side could not be loaded, the match is skipped)."""

    role: str
    opponent: str
    play: Callable[[], Tally] | None = field(repr=False, compare=False)


@dataclass(frozen=True)
class EvaluationPlan:
    """A candidate's matches, in the order their results are applied (champion, baselines,
    verification members), made at the candidate's `epoch` with the champion of that time."""

    candidate: str
    champion: str | None
    epoch: int
    matches: tuple[PlannedMatch, ...]

    def play(self) -> list[Tally | None]:
        """Every match's tally from the candidate's side (None for a skipped match)."""
        return [None if m.play is None else m.play() for m in self.matches]

    def state_dict(self) -> dict:
        """What an exact resume needs to play the same matches again (checkpoint/league_fields.py)."""
        return {
            "candidate": self.candidate,
            "champion": self.champion,
            "epoch": self.epoch,
            "opponents": [[m.role, m.opponent] for m in self.matches],
        }


@dataclass(frozen=True)
class Pending:
    """A plan being played on the worker; `future` gives its tallies (or raises its exception)."""

    plan: EvaluationPlan
    future: Future


def play_on_stream(plan: EvaluationPlan, stream: torch.cuda.Stream | None, ready) -> list[Tally | None]:
    """The plan's tallies; on CUDA under the worker's own stream, once the main stream's work
    that loaded the sides (`ready`, an event) is done."""
    if stream is None:
        return plan.play()
    stream.wait_event(ready)
    with torch.cuda.stream(stream):
        tallies = plan.play()
    stream.synchronize()
    return tallies


class EvaluationWorker:
    """One thread that plays plans, one at a time, with the main thread's torch thread count (the
    same kernels, so the same results as inline); started on the first plan (replicas under
    torchrun, which evaluate nothing, never start it). On CUDA it plays on a second stream."""

    def __init__(self, device: torch.device):
        self.device = device
        self.executor: ThreadPoolExecutor | None = None
        self.stream: torch.cuda.Stream | None = None

    def submit(self, plan: EvaluationPlan) -> Pending:
        if self.executor is None:
            threads = torch.get_num_threads()
            self.executor = ThreadPoolExecutor(1, "league-evaluation", torch.set_num_threads, (threads,))
            if self.device.type == "cuda":
                self.stream = torch.cuda.Stream(self.device)
        ready = None
        if self.stream is not None:
            ready = torch.cuda.Event()
            ready.record(torch.cuda.current_stream(self.device))
        return Pending(plan, self.executor.submit(play_on_stream, plan, self.stream, ready))
