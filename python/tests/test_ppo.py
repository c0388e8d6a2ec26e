"""PPO (ppo.py): training's recurrence (ppo.unroll == stepping with the stored states restored at
boundaries), the PPO loss's gradients reaching every parameter, the update (PPO's ratio is 1 before
the first gradient step, update_epochs passes over the batch in a new order each time), the LR
schedules (lr_lambda), and a compiled PPOUpdater step agreeing with the eager one."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from helpers.policy_data import make_policy, rollout_obs
from helpers.trainers import collect, smoke_trainer
from tcgleague.games.emberfront.layout import legal_from_obs
from tcgleague.games.emberfront.sampler import TCGSampler
from tcgleague.magnet import Magnet
from tcgleague.ppo import STAT_NAMES, PPOLoss, PPOUpdater, UpdateSettings, lr_lambda, unroll
from tcgleague.trainer import Trainer

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def data():
    return rollout_obs()


# ---- the recurrence and the loss -----------------------------------------------------------------
def sequence(data, M=8, T=12, seed=1, **arch):
    """obs [M, T, obs], boundaries (t = 0 plus mid-sequence restarts) and stored states [M, T, H]."""
    obs, env = data
    policy = make_policy(env, seed=seed, entity_dim=16, hidden_size=16, card_embed_dim=8, **arch)
    o = obs[:T, :M].transpose(0, 1).contiguous()
    boundary = torch.zeros(M, T)
    boundary[:, 0] = 1.0
    boundary[::2, 5] = 1.0
    boundary[1::3, 9] = 1.0
    g = torch.Generator().manual_seed(seed)
    state_h = torch.randn(M, T, policy.hidden_size, generator=g)
    state_c = torch.randn(M, T, policy.hidden_size, generator=g)
    return policy, o, boundary, state_h, state_c


def test_unroll_equals_stepping_with_stored_states_restored_at_boundaries(data):
    """Training's recurrence replays the rollout: carry (h, c) from step to step, and where a
    boundary marks a segment/row/episode start, restart from the state stored for that step."""
    policy, obs, boundary, state_h, state_c = sequence(data)
    M, T = boundary.shape
    with torch.no_grad():
        out, ent = unroll(policy, obs, boundary, state_h, state_c)
        assert out.shape == (M * T, policy.hidden_size)
        out = out.reshape(M, T, -1)
        # the rollout's way: all M rows step together, one time step at a time. The encoder is
        # row-wise; encoding the same [M * T] batch keeps the BLAS blocking identical, so the
        # comparison is exact.
        x, ent_ref = policy.encode(obs.reshape(M * T, -1))
        assert torch.equal(ent, ent_ref)
        x = x.reshape(M, T, -1)
        h, c = torch.full_like(state_h[:, 0], float("nan")), torch.full_like(state_c[:, 0], float("nan"))
        for t in range(T):
            restart = torch.nonzero(boundary[:, t]).flatten()
            h, c = h.clone(), c.clone()
            h[restart], c[restart] = state_h[restart, t], state_c[restart, t]
            step_out, (h, c) = policy.step(x[:, t], (h, c))
            assert torch.equal(out[:, t], step_out), f"t = {t}"
        # one row at a time, one step at a time (batch 1: BLAS may round differently, so close)
        for m in range(M):
            h = c = None
            for t in range(T):
                if boundary[m, t]:
                    h, c = state_h[m, t][None], state_c[m, t][None]
                xm, _ = policy.encode(obs[m, t][None])
                step_out, (h, c) = policy.step(xm, (h, c))
                torch.testing.assert_close(out[m, t], step_out[0], rtol=0, atol=1e-5)
        # the boundaries matter: without the restarts the outputs after the first one differ
        # (rows 0, 2, 4, 6 restart at t = 5), and the states stored off-boundary are never read
        flat = torch.zeros(M, T)
        flat[:, 0] = 1.0
        no_restart, _ = unroll(policy, obs, flat, state_h, state_c)
        no_restart = no_restart.reshape(M, T, -1)
        assert torch.equal(no_restart[:, :5], out[:, :5])
        assert not torch.allclose(no_restart[0, 5], out[0, 5], atol=1e-4)
        assert torch.equal(no_restart[1, :9], out[1, :9]) and not torch.allclose(no_restart[1, 9], out[1, 9])
        noise = torch.randn_like(state_h) * (1.0 - boundary)[..., None]
        again, _ = unroll(policy, obs, boundary, state_h + noise, state_c - noise)
        assert torch.equal(again.reshape(M, T, -1), out)
        # a restart uses the stored state, not a zero state
        zeroed, _ = unroll(policy, obs, boundary, state_h * (1.0 - boundary)[..., None], state_c)
        assert not torch.allclose(zeroed.reshape(M, T, -1)[:, 0], out[:, 0], atol=1e-4)


@torch.no_grad()
def sampled(policy, sampler, obs, boundary, state_h, state_c, params):
    """What a rollout stores for segments [M, T] of rows: actions [M, T, width], their log-probs
    and the values [M, T], sampled from seeded draws."""
    m, t = boundary.shape
    out, ent = unroll(policy, obs, boundary, state_h, state_c)
    draws = sampler.draw(m * t, torch.Generator().manual_seed(0))
    actions, logprob, _ = sampler.sample_rows(policy, out, ent, obs.reshape(m * t, -1), params, uniforms=draws)
    return actions.reshape(m, t, -1), logprob.reshape(m, t), policy.value(out).reshape(m, t)


@pytest.mark.parametrize(
    "arch",
    [{}, {"entity_attention_layers": 1}, {"legal_scorer_dim": 8}, {"legal_scorer_dim": 8, "legal_effect_dim": 8}],
    ids=["pooled", "attention", "legal_list", "legal_effects"],
)
def test_every_parameter_gets_a_finite_nonzero_gradient_from_the_ppo_loss(data, arch):
    """The PPO loss (ppo.PPOLoss, what training differentiates) reaches every parameter, and a
    policy builds only the heads it scores actions with."""
    policy, obs, boundary, state_h, state_c = sequence(data, M=8, T=12, seed=2, **arch)
    sampler = TCGSampler(1.0, 1.3, 0.1)
    params = sampler.params_tensor()
    M, T = boundary.shape
    _, count = legal_from_obs(obs.reshape(M * T, -1))
    assert (count > 0).sum() > M * T // 2
    actions, logprob, value = sampled(policy, sampler, obs, boundary, state_h, state_c, params)
    g = torch.Generator().manual_seed(3)
    noisy = lambda t: (t + 0.05 * torch.randn(t.shape, generator=g)).reshape(M, T)  # noqa: E731
    loss_fn = PPOLoss(policy, sampler)
    policy.zero_grad(set_to_none=True)
    loss, stats = loss_fn(
        obs,
        actions.reshape(M, T, 4),
        noisy(logprob),
        noisy(value),
        torch.randn(M, T, generator=g),
        torch.randn(M, T, generator=g),
        torch.ones(M, T),
        boundary,
        state_h,
        state_c,
        torch.zeros(M, T, 0),
        params,
        torch.tensor([0.2, 0.5, 0.2, 0.01, 0.0]),
    )
    assert torch.isfinite(loss) and torch.isfinite(stats).all()
    loss.backward()
    missing, bad, zero = [], [], []
    for name, p in policy.named_parameters():
        if p.grad is None:
            missing.append(name)
        elif not torch.isfinite(p.grad).all():
            bad.append(name)
        elif not p.grad.abs().sum() > 0:
            zero.append(name)
    assert not missing, f"parameters outside the loss: {missing}"
    assert not bad, f"non-finite gradients: {bad}"
    assert not zero, f"all-zero gradients: {zero}"


# ---- the update ----------------------------------------------------------------------------------
def test_first_minibatch_ratio_is_one_and_training_changes_weights():
    trainer = smoke_trainer(
        None,
        "--policy.subaction-temperature-initial",
        "1.7",
        "--policy.subaction-temperature-final",
        "1.7",
        "--policy.smoothing-eps-initial",
        "0.2",
        "--policy.smoothing-eps-final",
        "0.2",
    )
    before = [p.detach().clone() for p in trainer.policy.parameters()]
    metrics = trainer.train_epoch()
    assert metrics["sampler/subaction_temperature"] == pytest.approx(1.7)
    assert metrics["losses/first_minibatch_ratio_dev"] < 1e-4
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.policy.parameters()))
    assert metrics["perf/sps"] > 0 and np.isfinite(metrics["losses/value_loss"])


def record_minibatches(trainer: Trainer) -> list[torch.Tensor]:
    seen = []
    load = trainer.learner.updater.load_minibatch

    def spy(batch, index, magnet_logp=None):
        seen.append(index.clone())
        return load(batch, index, magnet_logp)

    trainer.learner.updater.load_minibatch = spy
    return seen


def test_update_epochs_passes_over_the_batch_in_a_new_order_each_time():
    segments = 512 // 16  # smoke: batch 512, horizon 16
    per_mb = 256 // 16  # minibatch 256
    runs = {}
    for epochs in (1, 2):
        trainer = smoke_trainer(None, "--train.update-epochs", str(epochs))
        seen = record_minibatches(trainer)
        collect(trainer)
        trainer.update(trainer.sampler.params_tensor())
        steps = {int(trainer.learner.optimizer.state[p]["step"]) for p in trainer.policy.parameters()}
        assert steps == {epochs * segments // per_mb}, "one Adam step per minibatch per pass"
        assert all(len(ix) == per_mb for ix in seen) and len(seen) == epochs * segments // per_mb
        passes = [torch.cat(seen[k : k + segments // per_mb]) for k in range(0, len(seen), segments // per_mb)]
        for order in passes:
            assert sorted(order.tolist()) == list(range(segments)), "each pass visits every segment once"
        runs[epochs] = passes
    assert torch.equal(runs[1][0], runs[2][0]), "the same seed gives the same first pass"
    assert not torch.equal(runs[2][0], runs[2][1]), "the second pass is reshuffled"


# ---- LR schedule ---------------------------------------------------------------------------------
def test_lr_lambda_values():
    linear, cosine, constant = (lr_lambda(s, 10) for s in ("linear", "cosine", "constant"))
    assert [linear(e) for e in (0, 5, 10)] == pytest.approx([1.0, 0.5, 0.0])
    assert [cosine(e) for e in (0, 5, 10)] == pytest.approx([1.0, 0.5, 0.0])
    assert [constant(e) for e in (0, 5, 10)] == [1.0, 1.0, 1.0]
    # the shapes differ between the ends: cosine stays high early and drops late
    assert linear(2.5) == pytest.approx(0.75) and linear(7.5) == pytest.approx(0.25)
    assert cosine(2.5) == pytest.approx(0.5 * (1 + math.cos(math.pi / 4))) and cosine(2.5) > linear(2.5)
    assert cosine(7.5) == pytest.approx(0.5 * (1 + math.cos(3 * math.pi / 4))) and cosine(7.5) < linear(7.5)
    assert linear(12) == 0.0 and cosine(12) == pytest.approx(0.0), "past the end the rate stays at 0"
    stages = lr_lambda("magnet_stage", 10, stage_epochs=4)  # back to the full rate with each new magnet
    assert [stages(e) for e in range(9)] == pytest.approx([1, 0.75, 0.5, 0.25, 1, 0.75, 0.5, 0.25, 1])


# ---- compiled optimizer step ---------------------------------------------------------------------
@pytest.mark.slow  # inductor C++ compile of the loss and its backward: ~5 s warm cache, ~60 s cold
@pytest.mark.parametrize("magnet", [None, "frozen"])
def test_compiled_step_matches_eager_and_does_not_recompile(magnet):
    """One real PPOUpdater.step (loss, backward, clipping, Adam) compiled vs eager from the same
    weights and optimizer state. compile_mode "default": reduce-overhead's CUDA graphs mean
    nothing on the CPU."""
    from torch._dynamo.utils import counters

    trainer = smoke_trainer(None, "--train.bptt-horizon", "4", "--train.minibatch-size", "64")
    t = trainer.cfg.train
    params = trainer.sampler.params_tensor()
    collect(trainer)
    batch = trainer.learner.buffer.pack(t.gamma, t.gae_lambda)
    coefs = torch.tensor([0.2, 0.5, 0.2, 0.01, 0.3 if magnet else 0.0])
    segments = t.minibatch_size // t.bptt_horizon
    anchor = Magnet(magnet, trainer.policy, 1, 0.5) if magnet else None  # the regularized loss: replayed magnet
    if anchor is not None:
        with torch.no_grad():
            for p in anchor.policy.parameters():
                p.add_(0.05)

    def updater(policy, optimizer, compiled: bool) -> PPOUpdater:
        settings = UpdateSettings(segments, 1, t.max_grad_norm, False, "default" if compiled else None)
        return PPOUpdater(
            policy,
            trainer.sampler,
            optimizer,
            settings,
            t.bptt_horizon,
            trainer.env.rows,
            trainer.policy.hidden_size,
            trainer.device,
            magnet=anchor,
        )

    # one eager step first, so the Adam moments and the PPO ratio are not at their trivial start
    warm = updater(trainer.policy, trainer.learner.optimizer, False)
    warm.load_minibatch(batch, torch.arange(segments), warm.replay_magnet(batch, params))
    warm.step(params, coefs)
    (p_eager, o_eager), (p_compiled, o_compiled) = (
        copy.deepcopy((trainer.policy, trainer.learner.optimizer)) for _ in range(2)
    )
    eager, compiled = updater(p_eager, o_eager, False), updater(p_compiled, o_compiled, True)
    g = torch.Generator().manual_seed(0)
    index = torch.randperm(batch.obs.shape[0], generator=g)[:segments]
    for u in (eager, compiled):
        u.load_minibatch(batch, index, u.replay_magnet(batch, params))
    s_eager, s_compiled = eager.step(params, coefs), compiled.step(params, coefs)
    assert s_eager.shape == (len(STAT_NAMES) + 1,) and torch.isfinite(s_eager).all()
    assert float(s_eager[-1]) == 0.0, "the step's non-finite flag is clear on a finite step"
    assert float(s_eager[STAT_NAMES.index("approx_kl")]) > 0, "the step starts away from ratio 1"
    assert (float(s_eager[STAT_NAMES.index("magnet_kl")]) > 0) == bool(magnet)
    torch.testing.assert_close(s_compiled, s_eager, rtol=1e-4, atol=1e-6)
    moved = False
    for (name, a), b, before in zip(p_eager.named_parameters(), p_compiled.parameters(), trainer.policy.parameters()):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6, msg=lambda m, n=name: f"{n}: {m}")
        moved |= not torch.equal(a, before)
    assert moved, "the step changed the weights"
    for sa, sb in zip(o_eager.state.values(), o_compiled.state.values()):
        assert torch.equal(sa["step"], sb["step"])
        torch.testing.assert_close(sb["exp_avg"], sa["exp_avg"], rtol=1e-4, atol=1e-7)
    graphs = counters["stats"]["unique_graphs"]
    for k in range(2):  # other minibatches, other sampler and loss coefficients: no recompile
        index = torch.randperm(batch.obs.shape[0], generator=g)[:segments]
        compiled.load_minibatch(batch, index, compiled.replay_magnet(batch, params))
        stats = compiled.step(params * (1.0 + 0.1 * k), coefs * (1.0 + 0.2 * k))
        assert torch.isfinite(stats).all()
    assert counters["stats"]["unique_graphs"] == graphs, "a second minibatch recompiled the step"
