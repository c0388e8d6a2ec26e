"""The run's average policy: an equal mixture of the learner's snapshots ([train] average_snapshots).

The last iterate of self-play still moves when a run ends: even with R-NaD's magnet each stage
settles near, not at, the equilibrium, and on the next stage somewhere else near it. CFR and
fictitious play deliver the average of their iterates for that reason, and so can we: every
`average_interval` learner steps the trainer takes a snapshot of the policy (its weights and
sampling parameters), keeps the newest `average_snapshots`, and each checkpoint writes them as
`average_policy.pt` in the run directory. That file is a league mixture file (league/mixture.py:
one member drawn per game, equal weights), so every tool that takes the league's Nash mixture
takes it, and the exact judge takes its members' reach-weighted average policy: the average
strategy of CFR. With `average_interval` equal to a frozen magnet's `magnet_interval` the snapshots
are the ends of R-NaD's stages (both are taken after the same update), where the magnet_stage rate
has decayed and the learner has settled. Snapshots before `average_start` steps are not kept (the
burn-in, CFR+'s averaging delay): the first stages are far from equilibrium, and with equal weights
one of them costs the average more than another late one gains it.

The snapshots are part of the run's checkpoint (`checkpoint` / `restore`), so a resumed run
delivers the same average."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from .league.mixture import MixtureEvaluate, member_policy, write_mixture_file
from .policy.family import Policy, Sampler, strip_compile_prefix, unwrap

AVERAGE_FILE = "average_policy.pt"


@dataclass
class Snapshot:
    """The learner at `global_step`: its weights (on the CPU) and its sampling parameters."""

    global_step: int
    policy: dict[str, torch.Tensor]
    sampling_params: dict[str, float]

    def member(self, policy_config: dict) -> dict:
        """This snapshot as a mixture file's member (equal weights are set by the caller)."""
        return {
            "id": f"step_{self.global_step}",
            "policy": self.policy,
            "policy_config": policy_config,
            "sampling_params": dict(self.sampling_params),
        }


class PolicyAverage:
    """The newest `keep` snapshots of the learner, one every `interval` learner steps, with the
    sampling parameters of `sampler` (the learner's) then, those before step `start` dropped; off
    when `keep` is 0 (no snapshot is taken, no file written). `judge`: the game's judge of a
    mixture (game.py's `evaluate_mixture`), None where the game has none."""

    def __init__(
        self,
        keep: int,
        interval: int,
        sampler: Sampler | None = None,
        judge: MixtureEvaluate | None = None,
        start: int = 0,
    ):
        self.keep, self.interval, self.sampler, self.judge = int(keep), int(interval), sampler, judge
        self.start = int(start)
        self.snapshots: list[Snapshot] = []
        self.taken_at = 0  # global step of the last snapshot taken, kept or not (or of the run's start)

    @property
    def enabled(self) -> bool:
        return self.keep > 0

    @torch.no_grad()
    def advance(self, policy: Policy, global_step: int) -> None:
        """After an update: a snapshot when `interval` steps have passed since the last one (kept
        from step `start` on; the interval counts from the dropped ones too, so every snapshot is
        taken at the same steps whatever the start)."""
        if not self.enabled or global_step - self.taken_at < self.interval:
            return
        self.taken_at = int(global_step)
        if global_step < self.start:
            return
        weights = {k: v.detach().cpu().clone() for k, v in strip_compile_prefix(unwrap(policy).state_dict()).items()}
        self.snapshots = [*self.snapshots, Snapshot(int(global_step), weights, self.sampler.get_sampling_params())]
        self.snapshots = self.snapshots[-self.keep :]

    def members(self, policy_config: dict) -> list[dict]:
        """The snapshots as mixture members with equal weights (none before the first snapshot)."""
        weight = 1.0 / max(1, len(self.snapshots))
        return [s.member(policy_config) | {"weight": weight} for s in self.snapshots]

    def evaluate(self, policy_config: dict) -> dict[str, float]:
        """The average judged by the game's mixture judge as eval/average_* ({} before the first
        snapshot or without a judge): the figures the league's Nash mixture gets as eval/mixture_*."""
        if not self.snapshots or self.judge is None:
            return {}
        members = [member_policy(s.policy, policy_config, s.sampling_params) for s in self.snapshots]
        judged = self.judge(members, [1.0 / len(members)] * len(members))
        return {name.replace("eval/mixture_", "eval/average_"): value for name, value in judged.items()}

    def write(self, run_dir: Path, policy_config: dict, game: str, global_step: int, epoch: int) -> Path | None:
        """`<run_dir>/average_policy.pt` (None before the first snapshot)."""
        members = self.members(policy_config)
        if not members:
            return None
        return write_mixture_file(run_dir / AVERAGE_FILE, members, game, global_step, epoch)

    def reset(self, global_step: int = 0) -> None:
        """No snapshots yet (a fresh run, a weights-only resume)."""
        self.snapshots, self.taken_at = [], int(global_step)

    def checkpoint(self) -> dict | None:
        """What the run's checkpoint keeps (None when off)."""
        if not self.enabled:
            return None
        snapshots = [
            {"global_step": s.global_step, "policy": s.policy, "sampling_params": s.sampling_params}
            for s in self.snapshots
        ]
        return {"taken_at": self.taken_at, "snapshots": snapshots}

    def restore(self, saved: dict | None, global_step: int, log=print) -> None:
        """Back to `checkpoint()`; a checkpoint without one (a run without the average) starts
        the average at `global_step`, said in one line."""
        if not self.enabled:
            return
        if saved is None:
            log("[resume] the checkpoint holds no average policy: its snapshots start from this step")
            self.reset(global_step)
            return
        self.snapshots = [
            Snapshot(int(s["global_step"]), s["policy"], dict(s["sampling_params"])) for s in saved["snapshots"]
        ][-self.keep :]
        self.taken_at = int(saved["taken_at"])
