"""Autoregressive masked action sampling over the engine's legal action list.

An action is a tuple (type, a, b, c). It is chosen stage by stage; each stage is restricted to
the values that appear in legal tuples consistent with the choices already made (tuple index <
count), so an illegal tuple can never be produced.

Stage distribution (T = primary_temperature at the type stage, subaction_temperature at a/b/c):
    p = softmax(masked_logits / T)
    a/b/c only:  p = (1 - eps) * p + eps * uniform over the stage's legal values
logprob = sum over stages of log p(chosen value); entropy = sum of the entropies of the stage
distributions actually sampled from (given the chosen prefix). Rows with count 0 (padding, or an
inactive seat) give action zeros, logprob 0 and entropy 0, never NaN.

`log_prob_entropy_stages_rows` also hands back each stage's whole distribution along the taken
prefix, so a regularizer can compare two policies decision by decision (magnet.py's KL).

A policy that scores its legal list whole (`scores_legal_list`, `[policy] legal_scorer_dim > 0`)
is sampled in one stage over the legal tuples instead: T = primary_temperature, eps mixes toward
uniform over the legal tuples, subaction_temperature is unused; the logprob of an action is that
of its tuple, and the entropy that of the whole distribution.

The sampling parameters live in a float tensor [3] = (primary_temperature,
subaction_temperature, smoothing_eps), so changing them never recompiles compiled code. PPO passes
the exact per-step tensor ([B, 3]) the rollout used to `log_prob_entropy`.
"""

from __future__ import annotations

import math

import torch

from ...policy.sampling import MASKED, SamplingParameters, stage_logp
from .layout import HEAD_SIZES, effects_from_obs, legal_from_obs

UNIFORM_WIDTH = max(HEAD_SIZES)  # uniform draws per sampling stage


def draw_uniforms(n: int, generator: torch.Generator, out: torch.Tensor | None = None) -> torch.Tensor:
    """The U(0, 1) draws `sample(uniforms=)` takes for `n` decisions, [n, 4, UNIFORM_WIDTH], on
    the generator's device. Drawn outside the sampler so compiled and vmapped code stays free
    of RNG state (a CUDA graph cannot own a generator), and one draw per decision keeps
    results independent of how rows are batched."""
    return torch.rand(n, 4, UNIFORM_WIDTH, generator=generator, device=generator.device, out=out)


def _stage_mask(values: torch.Tensor, consistent: torch.Tensor, n: int) -> torch.Tensor:
    """values [B, L] long, consistent [B, L] bool -> [B, n] bool: values present in consistent tuples."""
    z = torch.zeros(values.shape[0], n, dtype=torch.float32, device=values.device)
    return z.scatter_add(1, values.clamp(0, n - 1), consistent.to(torch.float32)) > 0  # out of place: vmap-able


def _draws(B: int, stage: int, width: int, uniforms, generator, device) -> torch.Tensor:
    """U(0, 1) draws [B, width] for one sampling stage: the decisions' own (`uniforms`), else
    the generator's, else the global RNG's."""
    if uniforms is not None:
        return uniforms.reshape(B, 4, -1)[:, stage, :width]
    if generator is not None:
        return torch.rand((B, width), generator=generator, device=device)
    return torch.rand((B, width), device=device)


def _entropy(logp: torch.Tensor) -> torch.Tensor:
    return -(logp.exp() * logp).sum(-1)


class TCGSampler(SamplingParameters):
    """Masked autoregressive sampler with runtime-settable temperatures and smoothing."""

    # ------------------------------------------------------------------ from observation rows
    # What the learning stack calls (actors.PolicyStep and PolicyActor, the PPO loss, the frozen
    # pool): observation rows in, their legal lists and the listed actions' effects read here, so
    # nothing outside the policy family reads the row's layout or an action's width.
    def draw(self, n: int, generator: torch.Generator, out: torch.Tensor | None = None) -> torch.Tensor:
        """The uniform draws of `n` decisions (`draw_uniforms`)."""
        return draw_uniforms(n, generator, out=out)

    def draws_buffer(self, n: int, device: torch.device) -> torch.Tensor:
        """A zeroed buffer `draw(n, ..., out=)` fills in place (a compiled step's static input)."""
        return torch.zeros(n, 4, UNIFORM_WIDTH, device=device)

    def sample_rows(self, policy, out, ent, obs, params=None, argmax: bool = False, uniforms=None):
        """`sample` for observation rows `obs` [n, ...]: (actions [n, 4], logprob [n], entropy [n])."""
        legal, count = legal_from_obs(obs)
        effects = effects_from_obs(obs)
        return self.sample(policy, out, ent, legal, count, params, argmax=argmax, uniforms=uniforms, effects=effects)

    def log_prob_entropy_rows(self, policy, out, ent, obs, actions, params=None):
        """`log_prob_entropy` of `actions` [n, ...] taken at observation rows `obs` [n, ...]."""
        return self.log_prob_entropy_stages_rows(policy, out, ent, obs, actions, params)[:2]

    def log_prob_entropy_stages_rows(self, policy, out, ent, obs, actions, params=None):
        """(logprob [n], entropy [n], stages): `stages` the log p [n, size] of each stage's
        distribution along `actions` (illegal values ~-1e9), what a KL per decision compares."""
        legal, count = legal_from_obs(obs)
        actions = actions.reshape(len(legal), 4)
        effects = effects_from_obs(obs)
        _, logprob, entropy, stages = self._run(
            policy, out, ent, legal, count, params, actions, None, False, None, effects
        )
        return logprob, entropy, stages

    def listed_log_probs(self, policy, out, ent, obs, params=None) -> torch.Tensor:
        """log pi of every legal action of observation rows `obs` [n, ...]: [n, MAX_LEGAL], -inf
        past each row's legal count: one pass over each list of a policy that scores it whole,
        else `log_prob_entropy` of each (row, legal tuple) pair, batched over all pairs."""
        legal, count = legal_from_obs(obs)
        if getattr(policy, "scores_legal_list", False):
            return self.legal_list_log_probs(policy, out, ent, legal, count, params, effects_from_obs(obs))
        pair_row, pair_index = (torch.arange(legal.shape[1], device=obs.device) < count[:, None]).nonzero(as_tuple=True)
        logprob, _ = self.log_prob_entropy(
            policy,
            out[pair_row],
            ent[pair_row],
            legal[pair_row],
            count[pair_row],
            legal[pair_row, pair_index],
            params,
            effects_from_obs(obs)[pair_row],
        )
        table = torch.full(legal.shape[:2], -torch.inf, device=obs.device)
        table[pair_row, pair_index] = logprob
        return table

    # ------------------------------------------------------------------ sampling
    def sample(
        self,
        policy,
        out,
        ent,
        legal,
        count,
        params=None,
        generator=None,
        argmax: bool = False,
        uniforms=None,
        effects=None,
    ):
        """-> (actions [..., 4] long, logprob [...], entropy [...]). Call under torch.no_grad() in rollouts.
        `uniforms` [..., 4, U] (U >= every stage's size), when given, are the U(0, 1) draws of
        the four stages (no RNG inside: the frozen opponents' vmapped forward passes them).
        `effects` [..., L, K]: what each legal tuple does (`layout.effects_from_obs`), read by a
        policy that scores them."""
        return self._run(policy, out, ent, legal, count, params, None, generator, argmax, uniforms, effects)[:3]

    def greedy(self, policy, out, ent, legal, count, params=None, effects=None):
        """Argmax at every stage (evaluation)."""
        return self._run(policy, out, ent, legal, count, params, None, None, True, None, effects)[:3]

    def log_prob_entropy(self, policy, out, ent, legal, count, actions, params=None, effects=None):
        """(logprob [...], entropy [...]) of the given actions [..., 4] under the same math as `sample`."""
        _, logprob, entropy, _ = self._run(policy, out, ent, legal, count, params, actions, None, False, None, effects)
        return logprob, entropy

    def legal_list_log_probs(self, policy, out, ent, legal, count, params=None, effects=None) -> torch.Tensor:
        """log pi of every listed tuple [B, L] of a policy that scores the legal list, in one
        pass over each row's list (the math of `sample`'s one stage; `log_prob_entropy` of each
        tuple in turn gives the same, L times over); -inf past each row's count."""
        listed = torch.arange(legal.shape[1], device=out.device)[None, :] < count[:, None]
        t_primary, _, eps = self.row_params(params, out.shape[0], out.device).unbind(1)
        mask = listed | (count <= 0)[:, None]
        logp = stage_logp(policy.legal_logits(out, ent, legal.long(), effects), mask, t_primary, eps)
        return logp.masked_fill(~listed, -math.inf)

    def _run(self, policy, out, ent, legal, count, params, actions, generator, argmax, uniforms=None, effects=None):
        lead = out.shape[:-1]
        out = out.reshape(-1, out.shape[-1])
        B = out.shape[0]
        ent = ent.reshape(B, *ent.shape[-2:])
        legal = legal.reshape(B, *legal.shape[-2:]).long()
        if effects is not None:
            effects = effects.reshape(B, *effects.shape[-2:])
        count = count.reshape(B).long()
        t_primary, t_sub, eps = self.row_params(params, B, out.device).unbind(1)
        if actions is not None:
            actions = actions.reshape(B, 4).long()
        row_ok = count > 0  # [B]
        listed = torch.arange(legal.shape[1], device=out.device)[None, :] < count[:, None]  # [B, L]
        if getattr(policy, "scores_legal_list", False):
            acts, logprob, entropy, stages = self._legal_list(
                policy, out, ent, legal, effects, listed, row_ok, t_primary, eps, actions, generator, argmax, uniforms
            )
        else:
            acts, logprob, entropy, stages = self._staged(
                policy, out, ent, legal, listed, row_ok, t_primary, t_sub, eps, actions, generator, argmax, uniforms
            )
        zero = torch.zeros_like(logprob)  # padded rows: action zeros, logprob and entropy 0
        acts = torch.where(row_ok[:, None], acts, torch.zeros_like(acts))
        logprob = torch.where(row_ok, logprob, zero)
        entropy = torch.where(row_ok, entropy, zero)
        return acts.reshape(*lead, 4), logprob.reshape(lead), entropy.reshape(lead), stages

    @staticmethod
    def _staged(
        policy, out, ent, legal, consistent, row_ok, t_primary, t_sub, eps, actions, generator, argmax, uniforms
    ):
        """Type, then source, then target, then slot, each over the values of the tuples
        consistent with the choices so far."""
        B = out.shape[0]
        sizes = (policy.n_action_types, policy.n_a, policy.n_b, policy.n_c)
        logprob = torch.zeros(B, device=out.device)
        entropy = torch.zeros(B, device=out.device)
        chosen: list[torch.Tensor] = []
        stages: list[torch.Tensor] = []
        for k in range(4):
            if k == 0:
                logits = policy.type_logits(out)
            elif k == 1:
                logits = policy.a_logits(out, ent, chosen[0])
            elif k == 2:
                logits = policy.b_logits(out, ent, chosen[0], chosen[1])
            else:
                logits = policy.c_logits(out, ent, chosen[0], chosen[1], chosen[2])
            values = legal[:, :, k]
            mask = _stage_mask(values, consistent, sizes[k])
            mask = mask | ~row_ok[:, None]  # padded rows: any value, results zeroed by the caller
            logp = stage_logp(logits, mask, t_primary if k == 0 else t_sub, None if k == 0 else eps)
            if actions is not None:
                choice = actions[:, k]
            elif argmax:
                choice = torch.where(mask, logp, torch.full_like(logp, -math.inf)).argmax(-1)
            else:
                u = _draws(B, k, logp.shape[1], uniforms, generator, logp.device)
                gumbel = -torch.log(-torch.log(u.clamp(1e-20, 1.0 - 1e-7)))
                choice = torch.where(mask, logp + gumbel, torch.full_like(logp, -math.inf)).argmax(-1)
            choice = torch.where(row_ok, choice, torch.zeros_like(choice))
            logprob = logprob + logp.gather(1, choice[:, None]).squeeze(1)
            entropy = entropy + _entropy(logp)
            stages.append(logp)
            consistent = consistent & (values == choice[:, None])
            chosen.append(choice)
        return torch.stack(chosen, -1), logprob, entropy, stages

    @staticmethod
    def _legal_list(
        policy, out, ent, legal, effects, listed, row_ok, t_primary, eps, actions, generator, argmax, uniforms
    ):
        """One stage over the legal tuples; a sample is one inverse-CDF draw (the first of the
        decision's uniforms), so it needs no more draws than the staged path."""
        B = out.shape[0]
        mask = listed | ~row_ok[:, None]
        logp = stage_logp(policy.legal_logits(out, ent, legal, effects), mask, t_primary, eps)
        if actions is None:
            if argmax:
                index = torch.where(mask, logp, torch.full_like(logp, -math.inf)).argmax(-1)
            else:
                u = _draws(B, 0, 1, uniforms, generator, logp.device)
                below = (logp.exp().cumsum(-1) < u).sum(-1)
                count = listed.sum(-1)
                index = torch.minimum(below, (count - 1).clamp(min=0))  # rounding never picks past the list
            actions = legal.gather(1, index[:, None, None].expand(B, 1, 4)).squeeze(1)
        # an action's probability is its tuple's (summed, should the list repeat a tuple)
        named = (legal == actions[:, None, :]).all(-1) & mask
        logprob = torch.logsumexp(torch.where(named, logp, torch.full_like(logp, MASKED)), -1)
        return actions, logprob, _entropy(logp.masked_fill(~mask, 0.0)), [logp]
