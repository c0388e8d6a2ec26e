"""The magnet-regularized PPO objective (magnet.py): KL(pi || magnet) per decision is 0 when the
policy is its magnet, its gradient is the KL's (finite differences agree), a uniform magnet's KL
is log(legal) - entropy, both policy families regularize through the PPO loss, and a run with a
frozen or an EMA magnet resumes bit-identically (the magnet is in the checkpoint)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch

from helpers.state_compare import assert_same
from tcgleague import train as train_cli
from tcgleague.config import ConfigError, load_config
from tcgleague.games.emberfront.sampler import TCGSampler
from tcgleague.magnet import Magnet, magnet_kl, split, uniform_stages
from tcgleague.policy.flat import FlatPolicyConfig, FlatSampler, build_flat_policy
from tcgleague.ppo import COEF_NAMES, PPOLoss, unroll
from test_game_plugin import KUHN_RUN
from test_ppo import data, sampled, sequence  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

WIDTH, ACTIONS = 12, 3


def flat_batch(seed: int = 0, m: int = 6, t: int = 4):
    """A flat policy and rows [m, t, WIDTH] whose legal mask (the last 3 bytes) allows 1 to 3 actions."""
    g = torch.Generator().manual_seed(seed)
    policy = build_flat_policy(FlatPolicyConfig(WIDTH, ACTIONS, hidden_size=8), seed)
    obs = (torch.rand(m, t, WIDTH, generator=g) < 0.5).to(torch.uint8)
    obs[..., -ACTIONS] = 1  # at least one legal action
    boundary = torch.zeros(m, t)
    boundary[:, 0] = 1.0
    state = torch.zeros(m, t, 8)
    actions = torch.zeros(m, t, 1, dtype=torch.long)  # action 0 is always legal
    return policy, obs, boundary, state, actions


def stages_of(policy, sampler, obs, boundary, state, actions):
    out, ent = unroll(policy, obs, boundary, state, state)
    flat = obs.reshape(out.shape[0], -1)
    return sampler.log_prob_entropy_stages_rows(policy, out, ent, flat, actions, None)


def magnet_stages(magnet, sampler, stages, obs, boundary, state, actions):
    """The magnet's replay (what PPOUpdater hands the loss), cut into the learner's stages."""
    return split(magnet.log_probs(sampler, unroll, obs, actions, boundary, state, state, None), stages)


def test_the_kl_is_zero_when_the_policy_is_its_magnet_and_positive_otherwise():
    policy, obs, boundary, state, actions = flat_batch()
    sampler = FlatSampler()
    magnet = Magnet("frozen", policy, interval=1, ema=0.5)
    _, _, stages = stages_of(policy, sampler, obs, boundary, state, actions)
    same = magnet_stages(magnet, sampler, stages, obs, boundary, state, actions)
    assert torch.equal(magnet_kl(stages, same), torch.zeros(len(stages[0])))
    with torch.no_grad():
        policy.actor.bias.add_(torch.tensor([1.0, -0.5, 0.25]))
    _, _, moved = stages_of(policy, sampler, obs, boundary, state, actions)
    kl = magnet_kl(moved, same)
    several = (obs[..., -ACTIONS:].sum(-1) > 1).reshape(-1)
    assert (kl[several] > 1e-4).all() and torch.allclose(kl[~several], torch.zeros(()), atol=1e-6)


def test_the_uniform_magnets_kl_is_log_legal_minus_entropy():
    policy, obs, boundary, state, actions = flat_batch(seed=3)
    _, entropy, stages = stages_of(policy, FlatSampler(), obs, boundary, state, actions)
    legal = obs[..., -ACTIONS:].sum(-1).reshape(-1).double()
    kl = magnet_kl(stages, uniform_stages(stages))
    torch.testing.assert_close(kl.double(), legal.log() - entropy.double(), atol=1e-5, rtol=0)


def test_the_kl_gradient_matches_finite_differences():
    policy, obs, boundary, state, actions = flat_batch(seed=5)
    sampler = FlatSampler(smoothing_eps=0.1)
    magnet_policy = copy.deepcopy(policy)
    with torch.no_grad():
        for p in magnet_policy.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    magnet = Magnet("frozen", magnet_policy, interval=1, ema=0.5)

    def kl() -> torch.Tensor:
        _, _, stages = stages_of(policy, sampler, obs, boundary, state, actions)
        return magnet_kl(stages, magnet_stages(magnet, sampler, stages, obs, boundary, state, actions)).mean()

    policy.zero_grad()
    kl().backward()
    weight = policy.actor.weight
    assert weight.grad.abs().max() > 1e-3
    step = 1e-2
    for index in [(0, 0), (1, 3), (2, 7)]:
        with torch.no_grad():
            weight[index] += step
            up = kl().item()
            weight[index] -= 2 * step
            down = kl().item()
            weight[index] += step
        assert (up - down) / (2 * step) == pytest.approx(weight.grad[index].item(), rel=2e-2, abs=2e-4)


def test_the_ppo_loss_regularizes_both_families(data):  # noqa: F811
    """Emberfront's autoregressive family: the loss with a magnet adds magnet_coef x the logged
    KL, which is 0 against itself; a moved magnet gives a positive KL and a different gradient."""
    policy, obs, boundary, state_h, state_c = sequence(data, M=4, T=12, seed=2)
    sampler = TCGSampler(1.0, 1.0, 0.05)
    params = sampler.params_tensor()
    m, t = boundary.shape
    actions, logprob, value = sampled(policy, sampler, obs, boundary, state_h, state_c, params)
    inputs = (
        obs,
        actions,
        logprob,
        value,
        torch.ones(m, t),
        torch.zeros(m, t),
        torch.ones(m, t),
        boundary,
        state_h,
        state_c,
    )
    coefs = torch.tensor([0.2, 0.5, 0.2, 0.01, 0.5])
    assert len(coefs) == len(COEF_NAMES)
    kl_index = -1
    plain_loss, _ = PPOLoss(policy, sampler)(*inputs, torch.zeros(m, t, 0), params, coefs)
    magnet = Magnet("ema", policy, interval=1, ema=0.5)

    def replayed() -> torch.Tensor:
        return magnet.log_probs(sampler, unroll, obs, actions, boundary, state_h, state_c, params)

    same_loss, same_stats = PPOLoss(policy, sampler, magnet)(*inputs, replayed(), params, coefs)
    assert float(same_stats[kl_index]) == 0.0 and torch.equal(same_loss, plain_loss)
    with torch.no_grad():
        g = torch.Generator().manual_seed(7)
        for p in magnet.policy.parameters():
            p.add_(0.5 * torch.randn(p.shape, generator=g))
    moved_loss, moved_stats = PPOLoss(policy, sampler, magnet)(*inputs, replayed(), params, coefs)
    assert float(moved_stats[kl_index]) > 1e-4
    torch.testing.assert_close(moved_loss, plain_loss + 0.5 * moved_stats[kl_index])


def test_the_ema_and_frozen_magnets_move_as_configured():
    policy, *_ = flat_batch()
    ema = Magnet("ema", policy, interval=1, ema=0.25)
    frozen = Magnet("frozen", policy, interval=100, ema=0.25)
    start = policy.actor.bias.detach().clone()
    with torch.no_grad():
        policy.actor.bias.add_(1.0)
    ema.advance(policy, 50)
    frozen.advance(policy, 50)
    torch.testing.assert_close(ema.policy.actor.bias, start + 0.25)
    assert torch.equal(frozen.policy.actor.bias, start)
    frozen.advance(policy, 100)
    assert torch.equal(frozen.policy.actor.bias, policy.actor.bias) and frozen.replaced_at == 100


@pytest.mark.parametrize("kind", ["frozen", "ema"])
def test_a_regularized_run_resumes_bit_identically(kind, tmp_path):
    magnet = ["--train.magnet", kind, "--train.magnet-coef-initial", "0.2", "--train.magnet-coef-final", "0.05"]
    magnet += ["--train.magnet-interval", "6144", "--train.magnet-ema", "0.1"]  # replaced mid-run
    # the rate's factor annealed across the resume (epochs of 2048 steps: 1 up to step 4096, 0.5 from 12288)
    magnet += ["--train.lr-scale-final", "0.5", "--train.lr-scale-anneal-start-step", "4096"]
    magnet += ["--train.lr-scale-anneal-end-step", "12288"]
    if kind == "frozen":  # the rate restarts with each magnet (3 epochs of 2048 steps a stage)
        magnet += ["--train.lr-schedule", "magnet_stage"]
    run = [*KUHN_RUN, *magnet, "--base.experiments-dir", str(tmp_path)]
    assert train_cli.main(run) == 0
    (run_a,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    resume = ["--resume-checkpoint", str(run_a / "model_kuhn_000004.pt"), "--resume-load-optimizer"]
    assert train_cli.main([*run, *resume]) == 0
    (run_b,) = [p for p in tmp_path.iterdir() if p.is_dir() and p != run_a]
    a, b = (torch.load(r / "model_kuhn_000008.pt", weights_only=True) for r in (run_a, run_b))
    for key in ("policy", "optimizer", "rng", "run_state", "magnet"):
        assert_same(a[key], b[key], key)
    assert a["magnet"]["kind"] == kind
    assert not torch.equal(a["magnet"]["policy"]["actor.bias"], a["policy"]["actor.bias"])
    metrics = (run_a / "metrics.jsonl").read_text()
    assert '"losses/magnet_kl"' in metrics and '"anneal/magnet_coef": 0.2' in metrics
    rates = [json.loads(line)["train/learning_rate"] for line in metrics.splitlines()]  # each epoch's own
    scales = (1, 1, 1, 0.875, 0.75, 0.625, 0.5, 0.5)
    stages = (1, 2 / 3, 1 / 3, 1, 2 / 3, 1 / 3, 1, 2 / 3) if kind == "frozen" else (1,) * 8
    assert rates == pytest.approx([3e-3 * f * s for f, s in zip(stages, scales)])


def test_magnet_stage_rates_need_a_frozen_magnet():
    with pytest.raises(ConfigError, match="magnet_stage restarts the rate with each frozen magnet"):
        load_config(Path("configs/kuhn.ini"), ["--train.lr-schedule", "magnet_stage", "--train.magnet", "ema"])
