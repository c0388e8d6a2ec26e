"""The PPO loss and the update loop around it; the loss is optionally torch.compile'd (and, on
CUDA with `reduce-overhead`, replayed as one CUDA graph).

The loss takes raw tensors of fixed shape [minibatch segments, horizon, ...]; minibatches are
copied into pre-allocated tensors with `index_select(out=)`, each step is marked with
`cudagraph_mark_step_begin()`, gradients are zeroed in place, and per-minibatch statistics
stay on the device until the epoch ends: reduce-overhead compilation replays one CUDA graph
only when every input lives at a fixed address with a fixed shape, and a host read inside the
step would force a sync (and a re-record) every minibatch.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn as nn

from .devices import mark_static
from .dist import SINGLE, Dist
from .errors import NonFiniteError
from .magnet import Magnet, magnet_kl, split, uniform_stages
from .policy.sampling import MASKED
from .rollout import Batch
from .rows import RowFormat

STAT_NAMES = ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "ratio_max_dev", "magnet_kl")
COEF_NAMES = ("clip", "vf_coef", "vf_clip", "ent_coef", "magnet_coef")
MINIBATCH_FIELDS = ("obs", "actions", "logprob", "value", "advantage", "ret", "mask", "boundary", "state_h", "state_c")
MAGNET_FIELDS = ("obs", "actions", "boundary", "state_h", "state_c")  # what the magnet's replay reads


def unroll(
    policy: nn.Module, obs: torch.Tensor, boundary: torch.Tensor, state_h: torch.Tensor, state_c: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Runs the LSTM over [M, T] steps; at a boundary the state restarts from the stored one
    (the state the rollout used there), so training replays the rollout exactly."""
    m, t = obs.shape[:2]
    x, ent = policy.encode(obs.reshape(m * t, -1))
    x = x.reshape(m, t, -1)
    h, c = state_h[:, 0], state_c[:, 0]
    outs = []
    for k in range(t):
        restart = boundary[:, k, None] > 0.5  # a select, not a blend: 0 x inf would leak NaN
        h = torch.where(restart, state_h[:, k], h)
        c = torch.where(restart, state_c[:, k], c)
        out, (h, c) = policy.step(x[:, k], (h, c))
        outs.append(out)
    return torch.stack(outs, 1).reshape(m * t, -1), ent


class PPOLoss(nn.Module):
    """Clipped policy and value losses with an entropy bonus and, with a `magnet`, the
    magnet-regularized objective's `magnet_coef * KL(pi || magnet)` per decision (magnet.py),
    averaged over the steps `mask` keeps, weighted by it (rollout.Batch.mask). `params` are the sampler
    parameters the rollout used; `coefs` = COEF_NAMES as a tensor so annealing a coefficient
    never triggers a recompile. Without a magnet the KL is neither computed nor logged (0).

    With `neurd_min_prob` the policy's part is NeuRD's (`neurd_terms`) instead of the clipped
    surrogate and the entropy's gradient."""

    def __init__(self, policy: nn.Module, sampler, magnet: Magnet | None = None, neurd_min_prob: float | None = None):
        super().__init__()
        self.policy = policy
        self.sampler = sampler
        self.neurd_min_prob = neurd_min_prob
        # what the magnet asks of the loss; its weights stay out of the loss (replayed by PPOUpdater)
        self.regularized = magnet is not None and magnet.enabled
        self.replayed = self.regularized and magnet.replays

    def forward(
        self, obs, actions, logprob, value, advantage, ret, mask, boundary, state_h, state_c, magnet_logp, params, coefs
    ):
        """`magnet_logp`: a replayed magnet's log-probabilities along these decisions
        (`Magnet.log_probs`, [m, t, width]; width 0 without one)."""
        out, ent = unroll(self.policy, obs, boundary, state_h, state_c)
        flat = obs.reshape(out.shape[0], -1)
        new_logprob, entropy, stages = self.sampler.log_prob_entropy_stages_rows(
            self.policy, out, ent, flat, actions, params
        )
        new_value = self.policy.value(out)
        old_logprob, old_value = logprob.reshape(-1), value.reshape(-1)
        adv, ret, keep = advantage.reshape(-1), ret.reshape(-1), mask.reshape(-1)
        kept = keep.sum().clamp_min(1.0)

        def mean(x: torch.Tensor) -> torch.Tensor:
            return (x * keep).sum() / kept

        clip, vf_coef, vf_clip, ent_coef, magnet_coef = coefs.unbind()
        log_ratio = new_logprob - old_logprob
        ratio = log_ratio.exp()
        pg_loss = mean(torch.maximum(-adv * ratio, -adv * ratio.clamp(1.0 - clip, 1.0 + clip)))
        v_clipped = old_value + (new_value - old_value).clamp(-vf_clip, vf_clip)
        v_loss = 0.5 * mean(torch.maximum((new_value - ret) ** 2, (v_clipped - ret) ** 2))
        ent_mean = mean(entropy)
        magnet_stages = None
        if self.regularized:
            magnet_stages = split(magnet_logp, stages) if self.replayed else uniform_stages(stages)
            kl_mean = mean(magnet_kl(stages, magnet_stages))
        else:
            kl_mean = torch.zeros_like(ent_mean)
        if self.neurd_min_prob is None:
            loss = pg_loss + vf_coef * v_loss - ent_coef * ent_mean + magnet_coef * kl_mean
        else:
            moved, pulled = neurd_terms(
                new_logprob, old_logprob, stages, magnet_stages, adv, ratio, clip, self.neurd_min_prob
            )
            loss = -mean(moved) + vf_coef * v_loss + mean(ent_coef * pulled[0] + magnet_coef * pulled[1])
        with torch.no_grad():
            approx_kl = mean((ratio - 1.0) - log_ratio)
            clipfrac = mean(((ratio - 1.0).abs() > clip).float())
            ratio_dev = ((ratio - 1.0).abs() * (keep > 0)).max()
            stats = torch.stack([pg_loss, v_loss, ent_mean, approx_kl, clipfrac, ratio_dev, kl_mean.detach()])
        return loss, stats


def neurd_terms(
    new_logprob: torch.Tensor,
    old_logprob: torch.Tensor,
    stages: list[torch.Tensor],
    magnet_stages: list[torch.Tensor] | None,
    adv: torch.Tensor,
    ratio: torch.Tensor,
    clip: torch.Tensor,
    min_prob: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """NeuRD's update (neural replicator dynamics, Hennes et al. 2020) as surrogates whose
    gradients move the logits themselves: (moved [n], (pulled by the entropy [n], by the magnet [n])).

    Policy gradient moves an action's logit by its advantage times its own probability, so an
    action the policy has nearly dropped comes back slowly however good it is (the rare states'
    worst mistakes on Leduc: tools/regret_map.py). NeuRD moves each logit by the advantage alone:
    the sampled action's, divided by its probability when sampled (floored at `min_prob`, which
    bounds the variance), with PPO's clip stopping a sample whose ratio has left the clip range
    in its advantage's direction. The bonus and the magnet pull by T (log pi - log magnet), not
    through the softmax either, so the fixed point is the same logit response softmax(A / T).
    Logits are centred over each stage's legal values (the softmax does not see their mean);
    an autoregressive action's stages share the joint action's weight."""
    centred, means = [], []
    for logp in stages:
        legal = (logp > MASKED / 2).to(logp.dtype)
        kept = logp * legal
        means.append(kept.sum(-1) / legal.sum(-1).clamp_min(1.0))
        centred.append((kept - means[-1][:, None]) * legal)
    chosen = new_logprob - sum(means)  # the chosen action's centred logits, summed over its stages
    outside = torch.where(adv > 0, ratio > 1.0 + clip, ratio < 1.0 - clip)
    weight = torch.where(outside, 0.0, adv / old_logprob.exp().clamp_min(min_prob)).detach()
    entropy_pull = sum((logp.detach() * c).sum(-1) for logp, c in zip(stages, centred))
    if magnet_stages is None:
        return weight * chosen, (entropy_pull, torch.zeros_like(entropy_pull))
    magnet_pull = sum(((logp - logq).detach() * c).sum(-1) for logp, logq, c in zip(stages, magnet_stages, centred))
    return weight * chosen, (entropy_pull, magnet_pull)


@dataclass
class UpdateSettings:
    minibatch_segments: int
    update_epochs: int
    max_grad_norm: float
    norm_adv: bool
    compile_mode: str | None  # torch.compile mode of the loss; None = eager
    precision: str = "fp32"  # fp32 | bf16 (autocast of the loss's forward; weights stay fp32)
    neurd_min_prob: float | None = None  # NeuRD's update with this floor (`neurd_terms`); None: PPO's


class PPOUpdater:
    """Owns the (optionally compiled) loss, the pre-allocated minibatch tensors and the
    optimizer step. One `update(batch)` call per epoch; statistics are read once at its end.

    Under torchrun the loss module is wrapped in DistributedDataParallel (`dist`): each rank's
    backward averages the gradients of every rank's minibatch, so all ranks take the same
    optimizer step on the same weights."""

    def __init__(
        self,
        policy: nn.Module,
        sampler,
        optimizer: torch.optim.Optimizer,
        settings: UpdateSettings,
        horizon: int,
        rows: RowFormat,
        hidden_size: int,
        device: torch.device,
        dist: Dist = SINGLE,
        magnet: Magnet | None = None,
    ):
        self.policy, self.optimizer, self.settings, self.device, self.dist = policy, optimizer, settings, device, dist
        self.loss = PPOLoss(policy, sampler, magnet, settings.neurd_min_prob)
        self.sampler = sampler
        self.magnet = magnet if magnet is not None and magnet.replays else None  # replayed once per update
        loss = dist.data_parallel(self.loss, device)
        self.compiled = settings.compile_mode is not None
        self.loss_fn = torch.compile(loss, mode=settings.compile_mode) if self.compiled else loss
        self.autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=settings.precision == "bf16")
        m, t = settings.minibatch_segments, horizon
        shapes = {
            "obs": (m, t, rows.obs_bytes),
            "actions": (m, t, rows.action_width),
            "logprob": (m, t),
            "value": (m, t),
            "advantage": (m, t),
            "ret": (m, t),
            "mask": (m, t),
            "boundary": (m, t),
            "state_h": (m, t, hidden_size),
            "state_c": (m, t, hidden_size),
        }
        dtypes = {"obs": torch.uint8, "actions": torch.long}  # compact rows, cast in the loss; the rest float32
        self.minibatch = {
            k: torch.zeros(s, device=device, dtype=dtypes.get(k, torch.float32)) for k, s in shapes.items()
        }
        width = 0 if self.magnet is None else self._replay(self.minibatch, sampler.params_tensor(device)).shape[-1]
        self.minibatch["magnet_logp"] = torch.zeros(m, t, width, device=device)
        mark_static(*self.minibatch.values())
        self.params = list(self.policy.parameters())
        self._warm_gradients()
        if loss is not self.loss:
            self._settle_buckets(loss)

    def _warm_gradients(self) -> None:
        """Allocate every .grad once so their addresses never change (CUDA-graph friendly)."""
        for p in self.policy.parameters():
            if p.grad is None:
                p.grad = torch.zeros_like(p)

    def _settle_buckets(self, data_parallel: nn.Module) -> None:
        """One throwaway forward and backward through DDP, gradients then zeroed. DDP lays its
        gradient buckets out anew after its first backward, and with 3+ ranks the all-reduce's
        summation order follows that layout: settling it here gives every real step of a fresh
        and of a resumed job the same layout, so resuming stays bit-exact."""
        coefs = torch.zeros(len(COEF_NAMES), device=self.device)
        loss, _ = data_parallel(**self.minibatch, params=self.sampler.params_tensor(self.device), coefs=coefs)
        loss.backward()
        for p in self.params:
            p.grad.zero_()

    def _replay(self, data, params: torch.Tensor) -> torch.Tensor:
        """The magnet's log-probabilities along segments of `data` (a minibatch dict or a Batch)."""
        fields = (data[k] if isinstance(data, dict) else getattr(data, k) for k in MAGNET_FIELDS)
        return self.magnet.log_probs(self.sampler, unroll, *fields, params)

    def replay_magnet(self, batch: Batch, params: torch.Tensor) -> torch.Tensor | None:
        """The magnet's log-probabilities along the whole batch [segments, horizon, width], a
        minibatch's worth of segments at a time (None without a replayed magnet)."""
        if self.magnet is None:
            return None
        m = self.settings.minibatch_segments
        chunks = [self._replay(batch.segments(start, start + m), params) for start in range(0, len(batch.obs), m)]
        return torch.cat(chunks)

    def load_minibatch(self, batch: Batch, index: torch.Tensor, magnet_logp: torch.Tensor | None = None) -> None:
        """Copies segments `index` of `batch` (and of the magnet's replay) into the fixed minibatch tensors."""
        for name in MINIBATCH_FIELDS:
            torch.index_select(getattr(batch, name), 0, index, out=self.minibatch[name])
        if magnet_logp is not None:
            torch.index_select(magnet_logp, 0, index, out=self.minibatch["magnet_logp"])

    def step(self, params: torch.Tensor, coefs: torch.Tensor) -> torch.Tensor:
        """One optimizer step on the loaded minibatch: loss, backward, gradient clipping, Adam.
        Returns the loss statistics (STAT_NAMES, then 1.0 where the loss or the gradient norm
        was non-finite) as a device tensor; nothing is read here."""
        if self.compiled:
            torch.compiler.cudagraph_mark_step_begin()
        with self.autocast:
            loss, stats = self.loss_fn(**self.minibatch, params=params, coefs=coefs)
        self.optimizer.zero_grad(set_to_none=False)
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(self.params, self.settings.max_grad_norm)
        self.optimizer.step()
        nonfinite = ~(torch.isfinite(loss.detach()) & torch.isfinite(grad_norm))
        return torch.cat([stats.detach(), nonfinite.to(stats.dtype).reshape(1)])

    def update(self, batch: Batch, params: torch.Tensor, coefs: torch.Tensor, generator: torch.Generator) -> dict:
        """update_epochs passes over `batch` in random minibatch order; statistics are read once.

        A non-finite loss, gradient norm or resulting weight anywhere in the update rolls the
        whole update back (weights and optimizer state as before it) and reports
        `losses/update_rolled_back` = 1 with the first bad minibatch step: the caller decides
        whether to stop ([train] nan_policy). Checked on the device, read with the statistics."""
        s = self.settings
        snapshot = self._snapshot()
        if s.norm_adv:  # over the batch's trained steps, once per epoch
            adv, keep = batch.advantage, batch.mask
            kept = keep.sum()
            mean = (adv * keep).sum() / kept
            std = (((adv - mean) ** 2 * keep).sum() / (kept - 1.0).clamp_min(1.0)).sqrt()
            batch.advantage = (adv - mean) / (std + 1e-8) * (keep > 0)  # a weight scales the loss, not the advantage
        segments = batch.obs.shape[0]
        n_mb = segments // s.minibatch_segments
        magnet_logp = self.replay_magnet(batch, params)
        totals = torch.zeros(len(STAT_NAMES) + 1, device=self.device)  # stays on the device until the end
        first_ratio_dev = None
        first_bad = torch.full((), -1.0, device=self.device)  # 1-based minibatch step of the first non-finite one
        steps = 0
        for _ in range(s.update_epochs):
            order = torch.randperm(segments, generator=generator, device=generator.device)
            for k in range(n_mb):
                self.load_minibatch(
                    batch, order[k * s.minibatch_segments : (k + 1) * s.minibatch_segments], magnet_logp
                )
                stats = self.step(params, coefs)
                steps += 1
                totals += stats
                first_bad = torch.where((first_bad < 0) & (stats[-1] > 0), float(steps), first_bad)
                if first_ratio_dev is None:
                    first_ratio_dev = stats[STAT_NAMES.index("ratio_max_dev")]
        totals /= max(1, steps)
        first = first_ratio_dev if first_ratio_dev is not None else torch.zeros((), device=self.device)
        weights_finite = torch.stack([torch.isfinite(p).all() for p in self.params]).all()
        # Every rank rolls back if any does (the gradients are shared, so the ranks agree anyway;
        # a loss that is non-finite on one rank alone must not split the replicas).
        any_bad = self.dist.any(((first_bad > 0) | ~weights_finite).float().reshape(1))
        figures = torch.cat(
            [totals[: len(STAT_NAMES)], first.reshape(1), first_bad.reshape(1), 1.0 - any_bad]
        ).tolist()  # the update's one host read
        out = {f"losses/{name}": v for name, v in zip(STAT_NAMES, figures)}
        out["losses/first_minibatch_ratio_dev"] = figures[len(STAT_NAMES)]
        bad_step = int(figures[-2])
        rolled_back = figures[-1] == 0.0  # some rank had a non-finite step or weights
        if rolled_back:
            self._restore(snapshot)
        out["losses/update_rolled_back"] = float(rolled_back)
        out["losses/first_nonfinite_step"] = float(bad_step if bad_step > 0 else (steps if rolled_back else 0))
        return out

    def _snapshot(self) -> tuple[list[torch.Tensor], dict]:
        """Copies of the weights and the optimizer state (device copies, no sync)."""
        weights = [p.detach().clone() for p in self.params]
        state = {
            p: {k: v.clone() if torch.is_tensor(v) else v for k, v in st.items()}
            for p, st in self.optimizer.state.items()
        }
        return weights, state

    @torch.no_grad()
    def _restore(self, snapshot: tuple[list[torch.Tensor], dict]) -> None:
        """Back to `_snapshot()`, in place (the compiled loss keeps the parameters' addresses)."""
        weights, state = snapshot
        for p, w in zip(self.params, weights):
            p.copy_(w)
        for p in [p for p in self.optimizer.state if p not in state]:
            del self.optimizer.state[p]  # created by the rolled-back update
        for p, saved in state.items():
            current = self.optimizer.state[p]
            for k, v in saved.items():
                if torch.is_tensor(v) and torch.is_tensor(current.get(k)):
                    current[k].copy_(v)
                else:
                    current[k] = v


def lr_lambda(schedule: str, total_epochs: int, stage_epochs: int = 1) -> Callable[[int], float]:
    """LR multiplier per epoch ([train] lr_schedule): linear decay to 0, cosine to 0, constant, or
    `magnet_stage`: linear decay to 0 within each frozen magnet's stage of `stage_epochs`, back to
    the full rate when the magnet is replaced. R-NaD's stages are proximal steps: each must settle
    on its regularized game before the next magnet, and a rate decaying over the whole run leaves
    the late stages too little of it to move."""
    if schedule == "constant":
        return lambda epoch: 1.0
    if schedule == "cosine":
        return lambda epoch: 0.5 * (1.0 + math.cos(math.pi * min(epoch, total_epochs) / total_epochs))
    if schedule == "magnet_stage":
        return lambda epoch: 1.0 - (epoch % stage_epochs) / stage_epochs
    return lambda epoch: max(0.0, 1.0 - epoch / total_epochs)


def rolled_back_update(nan_policy: str, where: str, warn: bool) -> None:
    """An update was rolled back (a non-finite loss, gradient or weight) at `where` (epoch, step,
    minibatch step): raise NonFiniteError, or with [train] nan_policy = skip_batch say (when
    `warn`: rank 0 speaks for every rank, all dropped it) that the epoch's batch was dropped."""
    where = f"{where} of the update: non-finite loss, gradient or weights"
    if nan_policy == "stop":
        raise NonFiniteError(
            f"{where}. The update was rolled back and nothing of this epoch is saved: the newest checkpoint "
            "is the last good one. Lower [train] learning_rate or max_grad_norm, or set [train] nan_policy = "
            "skip_batch to drop such batches"
        )
    if warn:
        print(
            f"[train] WARNING: {where}; this epoch's batch was dropped ([train] nan_policy = skip_batch)",
            file=sys.stderr,
        )
