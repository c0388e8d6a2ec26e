"""NeuRD's update (`[train] update_rule = neurd`, ppo.py's `neurd_terms`): the sampled action's
logit moves by its advantage over its probability (floored), every legal logit by T log pi for the
bonus; in expectation the step vanishes exactly at the logit response softmax(Q / T), and an
action the policy has nearly dropped comes back at its advantage's pace, not its probability's.
Both policy families train through it, and a bad rule is refused by name."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from tcgleague import train as train_cli
from tcgleague.config import ConfigError, load_config
from tcgleague.games.emberfront.sampler import TCGSampler
from tcgleague.policy.sampling import MASKED
from tcgleague.ppo import PPOLoss, neurd_terms
from test_game_plugin import KUHN_RUN
from test_ppo import data, sampled, sequence  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def stage(logits: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """A sampler's stage: log pi over the legal values, MASKED elsewhere."""
    return torch.where(legal, logits.masked_fill(~legal, -math.inf).log_softmax(-1), torch.full_like(logits, MASKED))


def logit_gradient(logits, legal, action: int, adv: float, coefs=(0.0, 0.0), min_prob=0.05, ratio=1.0, clip=0.2):
    """d(loss)/d(logits) of one decision under NeuRD: -moved + ent_coef x entropy pull."""
    z = logits.clone().requires_grad_(True)
    logp = stage(z, legal)
    new = logp[:, action]
    old = new.detach() - math.log(ratio)
    moved, (pull, _) = neurd_terms(
        new, old, [logp], None, torch.tensor([adv]), torch.tensor([ratio]), torch.tensor(clip), min_prob
    )
    (-moved + coefs[0] * pull).sum().backward()
    return z.grad[0]


def test_the_sampled_logit_moves_by_its_advantage_over_its_probability_centred_on_the_legal_ones():
    logits = torch.tensor([[2.0, -3.0, 0.5, 7.0]])
    legal = torch.tensor([[True, True, True, False]])
    p = stage(logits, legal).exp()[0]
    grad = logit_gradient(logits, legal, action=1, adv=1.5, min_prob=1e-6)
    expected = -(1.5 / p[1]) * (torch.tensor([0.0, 1.0, 0.0, 0.0]) - torch.tensor([1, 1, 1, 0]) / 3)
    torch.testing.assert_close(grad, expected)
    floored = logit_gradient(logits, legal, action=1, adv=1.5, min_prob=0.2)  # p[1] < 0.2: the floor's weight
    torch.testing.assert_close(floored, expected * float(p[1]) / 0.2)
    # PPO's clip: a sample whose ratio has left the range in its advantage's direction moves nothing
    assert torch.equal(logit_gradient(logits, legal, 1, adv=1.5, ratio=1.3), torch.zeros(4))
    assert logit_gradient(logits, legal, 1, adv=-1.5, ratio=1.3).abs().sum() > 0


def test_the_bonus_and_the_magnet_pull_each_logit_by_its_log_ratio_centred():
    logits = torch.tensor([[1.0, 0.0, -1.0]], requires_grad=True)
    legal = torch.ones(1, 3, dtype=torch.bool)
    magnet = stage(torch.tensor([[0.0, 2.0, 0.0]]), legal)
    logp = stage(logits, legal)
    _, (entropy_pull, magnet_pull) = neurd_terms(
        logp[:, 0], logp[:, 0].detach(), [logp], [magnet], torch.zeros(1), torch.ones(1), torch.tensor(0.2), 0.05
    )
    (0.1 * entropy_pull + 0.3 * magnet_pull).sum().backward()
    pull = 0.1 * logp[0].detach() + 0.3 * (logp[0].detach() - magnet[0])
    torch.testing.assert_close(logits.grad[0], pull - pull.mean())


def expected_step(logits, legal, values, temperature, min_prob=1e-9):
    """E over the sampled action (drawn from pi) of the loss's logit gradient, with each action's
    advantage Q(a) - V."""
    p = stage(logits, legal).exp()[0]
    v = float((p * values).sum())
    step = torch.zeros(logits.shape[1])
    for a in torch.nonzero(legal[0]).flatten().tolist():
        g = logit_gradient(logits, legal, a, float(values[a]) - v, (temperature, 0.0), min_prob)
        step += float(p[a]) * g
    return step


def test_in_expectation_the_step_vanishes_at_the_logit_response_and_nowhere_else():
    values = torch.tensor([1.0, -2.0, 0.4])
    legal = torch.tensor([[True, True, True]])
    temperature = 0.5
    response = (values / temperature).unsqueeze(0)  # logits of softmax(Q / T)
    assert expected_step(response, legal, values, temperature).abs().max() < 1e-5
    assert expected_step(torch.zeros(1, 3), legal, values, temperature).abs().max() > 0.1


def test_a_nearly_dropped_best_action_comes_back_at_its_advantages_pace():
    """The policy plays action 1 at 0.01 although it is worth 3 more: PPO's expected logit step
    on it is its probability times its advantage, NeuRD's the advantage itself."""
    values = torch.tensor([0.0, 3.0])
    legal = torch.tensor([[True, True]])
    logits = torch.tensor([[0.0, math.log(0.01 / 0.99)]])
    neurd = -expected_step(logits, legal, values, 0.0)  # ascent direction
    p = stage(logits, legal).exp()[0]
    advantage = values - float((p * values).sum())
    ppo = p * advantage  # E[A (e_a - p)] = p * A
    assert float(neurd[1] - neurd[0]) == pytest.approx(float(values[1] - values[0]), rel=1e-4)
    assert float(neurd[1] - neurd[0]) > 40 * float(ppo[1] - ppo[0]) > 0


def test_the_autoregressive_family_trains_through_neurd(data):  # noqa: F811
    policy, obs, boundary, state_h, state_c = sequence(data, M=4, T=12, seed=2)
    sampler = TCGSampler(1.0, 1.0, 0.05)
    params = sampler.params_tensor()
    m, t = boundary.shape
    actions, logprob, value = sampled(policy, sampler, obs, boundary, state_h, state_c, params)
    adv = torch.randn(m, t, generator=torch.Generator().manual_seed(3))
    inputs = (obs, actions, logprob, value, adv, torch.zeros(m, t), torch.ones(m, t), boundary, state_h, state_c)
    coefs = torch.tensor([0.2, 0.5, 0.2, 0.01, 0.0])
    losses = {}
    for rule, floor in (("ppo", None), ("neurd", 0.05)):
        policy.zero_grad()
        loss, stats = PPOLoss(policy, sampler, None, floor)(*inputs, torch.zeros(m, t, 0), params, coefs)
        loss.backward()
        grads = [p.grad for p in policy.parameters() if p.grad is not None]
        assert grads and all(torch.isfinite(g).all() for g in grads) and torch.isfinite(stats).all()
        losses[rule] = (float(loss.detach()), sum(float(g.abs().sum()) for g in grads))
    assert losses["ppo"] != losses["neurd"]


def test_a_kuhn_run_learns_with_neurd(tmp_path):
    run = [*KUHN_RUN, "--train.update-rule", "neurd", "--base.experiments-dir", str(tmp_path)]
    assert train_cli.main(run) == 0
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    judged = [float(line.split('"eval/exploitability": ')[1].split(",")[0]) for line in lines if "eval/exploit" in line]
    assert judged[-1] < 0.3 < 0.458  # uniform play's is 0.458


@pytest.mark.parametrize(
    "key, value, message",
    [("update-rule", "replicator", "must be one of ppo, neurd"), ("neurd-min-prob", "0", "must be in (0, 1]")],
)
def test_a_bad_update_rule_is_refused_by_name(key, value, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("]", r"\]")):
        load_config(Path("configs/kuhn.ini"), [f"--train.{key}", value])
