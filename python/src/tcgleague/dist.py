"""Data-parallel training on torch.distributed, as `torchrun` starts it: one process per rank.

    torchrun --standalone --nproc_per_node 2 train.py --config configs/smoke.ini

Each rank owns an env shard (`[env] num_games` games, seeded from the base seed and the rank),
its own rollout and a replica of the policy; the loss is wrapped in DistributedDataParallel,
so every minibatch's gradients are averaged across ranks before the one optimizer step and the
replicas stay identical. Rank 0 alone writes files (checkpoints, metrics, W&B, league state).
Everything else that crosses ranks goes through the few calls here, at most a few times per
epoch: `all_gather` (metrics and weight digests), `gather` to rank 0 (run states, league
results), `broadcast` from rank 0 (run id, resume checkpoint, the league pool; `from_main` when
rank 0 may refuse), `any` (a rolled-back update). A plain `python train.py` is the one-rank
`SINGLE` context: no process group, and every call here is then the identity.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
import torch
import torch.distributed as torch_dist
import torch.nn as nn

from .config import ConfigError, DistSection

TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
# The store's keys of the teardown's meeting (shutdown): ranks that left the last barrier, and "all did".
LEFT_BARRIER, ALL_LEFT = "teardown/left_barrier", "teardown/all_left"
# The policy's buffers are constants (feature indices and scales), identical on every rank: DDP
# need not broadcast them before each forward. Newer torch names that switch differently.
NO_BUFFER_SYNC = (
    {"forward_sync_buffers": False}
    if "forward_sync_buffers" in inspect.signature(nn.parallel.DistributedDataParallel).parameters
    else {"broadcast_buffers": False}
)


@dataclass(frozen=True)
class Dist:
    """This process's place in the job; `SINGLE` outside torchrun."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    backend: str | None = None  # None: no process group (a single process)
    objects_group: Any = None  # the gloo group that carries pickled objects (None: the default group)
    store: Any = None  # the job's key-value store (torchrun's): the teardown's last meeting point

    @property
    def enabled(self) -> bool:
        return self.backend is not None

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def rank_seed(self, seed: int) -> int:
        """The seed of this rank's env shard and sampling streams. Rank 0 keeps the base seed, so
        one rank under torchrun plays exactly the games `python train.py` plays."""
        if self.rank == 0:
            return int(seed)
        return int(np.random.SeedSequence([int(seed), self.rank]).generate_state(1)[0] % 2**31)

    def all_gather(self, value: Any) -> list[Any]:
        """Every rank's `value`, in rank order, on every rank (pickled: once per epoch, not per step)."""
        if not self.enabled:
            return [value]
        out: list[Any] = [None] * self.world_size
        torch_dist.all_gather_object(out, value, group=self.objects_group)
        return out

    def gather(self, value: Any) -> list[Any] | None:
        """Every rank's `value`, in rank order, on rank 0; None on the other ranks."""
        if not self.enabled:
            return [value]
        out: list[Any] | None = [None] * self.world_size if self.is_main else None
        torch_dist.gather_object(value, out, dst=0, group=self.objects_group)
        return out

    def broadcast(self, value: Any) -> Any:
        """Rank 0's `value` on every rank (the others pass anything, e.g. None)."""
        if not self.enabled:
            return value
        box = [value if self.is_main else None]
        torch_dist.broadcast_object_list(box, src=0, group=self.objects_group)
        return box[0]

    def from_main(self, produce: Callable[[], Any], refusals: tuple[type[Exception], ...]) -> Any:
        """Rank 0's `produce()` on every rank; if it raises one of `refusals`, every rank raises
        that error, so the whole job stops with the same message instead of the other ranks
        waiting for a rank that is gone."""
        outcome: Any = None
        if self.is_main:
            try:
                outcome = (produce(), None)
            except refusals as err:
                outcome = (None, err)
        value, refusal = self.broadcast(outcome)
        if refusal is not None:
            raise refusal
        return value

    def data_parallel(self, module: nn.Module, device: torch.device) -> nn.Module:
        """`module` wrapped in DistributedDataParallel (gradients averaged across ranks in
        backward); the module itself in a single process. Construction broadcasts rank 0's
        weights, so the replicas start identical."""
        if not self.enabled:
            return module
        device_ids = [device] if device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(module, device_ids=device_ids, **NO_BUFFER_SYNC)

    def any(self, flag: torch.Tensor) -> torch.Tensor:
        """A device tensor that is nonzero where `flag` is on any rank (no host read)."""
        if self.enabled:
            flag = flag.clone()
            torch_dist.all_reduce(flag, op=torch_dist.ReduceOp.MAX)
        return flag


SINGLE = Dist()


def launched_by_torchrun() -> bool:
    return all(v in os.environ for v in TORCHRUN_VARIABLES)


def torchrun_local_rank() -> int | None:
    """This process's GPU index under torchrun (LOCAL_RANK); None outside torchrun."""
    return int(os.environ["LOCAL_RANK"]) if launched_by_torchrun() else None


def backend_for(section: DistSection, device: torch.device) -> str:
    if section.backend != "auto":
        return section.backend
    return "nccl" if device.type == "cuda" else "gloo"


def init_distributed(section: DistSection, device: torch.device) -> Dist:
    """Joins the torchrun job this process was started in (SINGLE when not under torchrun).
    `device` is this rank's (devices.resolve_device with the local rank)."""
    if not launched_by_torchrun():
        return SINGLE
    backend = backend_for(section, device)
    if backend == "nccl" and device.type != "cuda":
        raise ConfigError(f"[dist] backend nccl needs CUDA, and this rank's device is {device}: use gloo (or auto)")
    if (
        device.type == "cuda"
        and device.index != torchrun_local_rank()
        and int(os.environ.get("LOCAL_WORLD_SIZE", "1")) > 1
    ):
        raise ConfigError(
            f"[base] device {device} puts every rank of this machine on one GPU: under torchrun each rank takes "
            "its own, cuda:<local rank>; use cuda or auto"
        )
    timeout = timedelta(seconds=section.timeout_seconds)
    store, rank, world_size = next(torch_dist.rendezvous("env://", timeout=timeout))
    # torchrun's restarts reuse its store; without a per-attempt prefix a restarted rank can read
    # the dead attempt's addresses and fail to connect (pytorch/pytorch#135712).
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    store = torch_dist.PrefixStore(f"tcgleague/attempt{attempt}", store)
    torch_dist.init_process_group(backend=backend, store=store, rank=rank, world_size=world_size, timeout=timeout)
    # Pickled objects travel over gloo (host memory) even when gradients use nccl.
    objects_group = torch_dist.new_group(backend="gloo", timeout=timeout) if backend != "gloo" else None
    return Dist(
        rank=torch_dist.get_rank(),
        world_size=torch_dist.get_world_size(),
        local_rank=int(os.environ["LOCAL_RANK"]),
        backend=backend,
        objects_group=objects_group,
        store=store,
    )


def shutdown(dist: Dist, finished: bool) -> None:
    """Tears the process group down. After a finished run no rank closes its connections while a
    peer may still be reading from them: a rank that did aborted in C++ (`terminate called without
    an active exception`, in 2- and 3-rank CPU jobs, a finished job reported as failed). So every
    rank first meets the others twice: a barrier (all finished their work), then a count in the
    store (all have left that barrier, so no collective is in flight; the store is a server of its
    own, not a peer connection). After a failure it does not wait: the failed rank may never come."""
    if dist.enabled and torch_dist.is_initialized():
        if finished:
            torch_dist.barrier(group=dist.objects_group)
            if dist.store.add(LEFT_BARRIER, 1) == dist.world_size:
                dist.store.set(ALL_LEFT, b"1")
            dist.store.wait([ALL_LEFT])  # the store's timeout is [dist] timeout_seconds
        torch_dist.destroy_process_group()


def leave_finished(code: int) -> None:
    """Ends a finished rank with `code` without running C++'s teardown at interpreter exit, the
    other place a finished gloo rank can abort (its threads and static objects destroyed in no
    fixed order): everything the run owes is written and closed by then, so only stdio is flushed."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def weights_digest(state_dict: dict[str, torch.Tensor]) -> str:
    """SHA-256 of a state dict's tensors (by name): identical replicas have identical digests."""
    h = hashlib.sha256()
    for name in sorted(state_dict):
        h.update(name.encode())
        h.update(state_dict[name].detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


# ---- metrics: one reduction per epoch ------------------------------------------------------------
SUMMED = ("environment/episodes",)
SLOWEST = ("perf/epoch_seconds", "perf/rollout_seconds", "perf/update_seconds", "perf/opponents_seconds")
ANY_RANK = ("losses/update_rolled_back", "losses/first_nonfinite_step", "resume/collapsed")  # the worst rank's


def merge_rank_metrics(per_rank: list[dict], batch_size: int) -> dict:
    """One epoch's metrics from every rank's (a single rank's come back unchanged): a value all
    ranks share (learning rate, anneals, the league's) as it is; episode counts summed; the
    other `environment/*` figures averaged over episodes; times from the slowest rank, flags and
    failure steps from the worst; `perf/sps` the job's (all ranks' decisions over the slowest
    rank's epoch); anything else the mean over the ranks that report it."""
    if len(per_rank) == 1:
        return dict(per_rank[0])
    out: dict = {}
    episodes = [m.get("environment/episodes", 0.0) for m in per_rank]
    for key in sorted(set().union(*per_rank)):
        values = [m[key] for m in per_rank if key in m]
        if key in SUMMED:
            out[key] = float(sum(values))
        elif all(v == values[0] for v in values):
            out[key] = values[0]
        elif key.startswith("environment/"):
            weights = [n for m, n in zip(per_rank, episodes) if key in m]
            out[key] = float(np.average(values, weights=weights)) if sum(weights) > 0 else float(np.mean(values))
        elif key in SLOWEST or key in ANY_RANK:
            out[key] = float(max(values))
        else:
            out[key] = float(np.mean(values))
    if out.get("perf/epoch_seconds", 0.0) > 0:
        out["perf/sps"] = len(per_rank) * batch_size / out["perf/epoch_seconds"]
    return out


def reduce_epoch(
    dist: Dist, metrics: dict, digest: str | None, flags: tuple[bool, ...], batch_size: int, epoch: int
) -> tuple[dict, tuple[bool, ...]]:
    """The epoch's metrics exchange: every rank's metrics merged, each of `flags` (the trainer's:
    out of time, stop requested) raised on any rank - so every rank stops at the same epoch - and
    a check that the replicas' weights (`digest`) are still identical (a divergence is a bug: the
    job stops rather than train on). A single process keeps its own metrics and flags as they are."""
    gathered = dist.all_gather((metrics, digest, tuple(flags)))
    merged = merge_rank_metrics([m for m, _, _ in gathered], batch_size)
    if dist.enabled:  # a torchrun job, of one rank too
        merged["dist/world_size"] = float(dist.world_size)
        merged["dist/rank0_sps"] = gathered[0][0]["perf/sps"]
        digests = [d for _, d, _ in gathered]
        if len(set(digests)) != 1:
            raise RuntimeError(
                f"the policy replicas diverged at epoch {epoch}: weight digests by rank {[d[:12] for d in digests]}"
            )
        merged["dist/replicas_in_sync"] = 1.0
    return merged, tuple(any(rank_flags) for rank_flags in zip(*(f for _, _, f in gathered)))
