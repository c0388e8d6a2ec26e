"""Exploration (`[train] explore_share`, exploration.py): a share of the learner's training
decisions drawn uniformly among the legal actions, seeded by the rank and the epoch; those
decisions, and the other seat's latest step of the same game, are left out of the loss and stop
their rows' GAE, so every trained return is on-policy; off (share 0) the rollout is unchanged."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers.state_compare import assert_same
from tcgleague import train as train_cli
from tcgleague.bench import train as bench_train
from tcgleague.bench.__main__ import main as bench_main
from tcgleague.build import build_trainer
from tcgleague.config import ConfigError, load_config
from tcgleague.exploration import SMOOTHING, TEMPERATURES, Exploration
from tcgleague.games.poker.rules import CALL
from test_game_plugin import KUHN_RUN
from test_rollout import add, credit, make_buffer

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_draws_are_a_share_of_the_learners_decisions_seeded_by_rank_and_epoch():
    learner = np.arange(0, 4000, 2)  # the learner's positions among 4,000 deciding rows
    explore = Exploration(0.1, seed=7)
    explore.start_epoch(3)
    first = explore.draw(4000, learner)
    assert not first[1::2].any(), "only the learner's decisions explore"
    assert 0.08 < first[learner].mean() < 0.12
    explore.start_epoch(3)
    assert np.array_equal(explore.draw(4000, learner), first), "an epoch draws the same again (a resume)"
    explore.start_epoch(4)
    assert not np.array_equal(explore.draw(4000, learner), first)
    other = Exploration(0.1, seed=8)
    other.start_epoch(3)
    assert not np.array_equal(other.draw(4000, learner), first), "another rank draws its own"
    off = Exploration(0.0, seed=7)
    off.start_epoch(3)
    assert not off.draw(4000, learner).any()


def test_exploring_rows_sample_with_smoothing_one_and_the_others_as_they_were():
    params = torch.tensor([0.9, 1.1, 0.05])
    explore = torch.tensor([True, False, True])
    rows = Exploration(0.2, seed=0).row_params(params, explore)
    assert rows.shape == (3, 3)
    assert rows[:, SMOOTHING].tolist() == pytest.approx([1.0, 0.05, 1.0])
    assert torch.equal(rows[1], params) and torch.equal(rows[:, :SMOOTHING], params[:SMOOTHING].expand(3, -1))
    assert Exploration(0.0, seed=0).row_params(params, explore) is params, "off: the step's input is unchanged"


def test_a_tempered_exploring_row_samples_at_the_temperature_without_smoothing():
    params = torch.tensor([0.9, 1.1, 0.05])
    rows = Exploration(0.2, seed=0, temperature=3.0).row_params(params, torch.tensor([True, False]))
    assert rows[0, TEMPERATURES].tolist() == pytest.approx([3.0, 3.0]) and rows[0, SMOOTHING] == pytest.approx(0.05)
    assert torch.equal(rows[1], params)


def test_an_explored_step_and_the_other_seats_latest_leave_the_loss_and_cut_the_trace():
    """Game 0 (rows 0 and 1): row 0 decides, row 1 decides, row 0 explores, row 1 and row 0 play
    on to a terminal. Row 1's first step led into the explored action: both leave the loss. Row 0's
    first step bootstraps from the explored state's value, the steps after it are trained. Game 1
    (rows 2 and 3), alongside, is untouched."""
    gamma, lam = 1.0, 0.9
    buf = make_buffer(capacity=8, horizon=4, num_rows=4)
    add(buf, [0, 2], [0.5, 0.1])  # slots 0, 1
    add(buf, [1, 3], [0.2, -0.1])  # slots 2, 3
    add(buf, [0], [0.4])  # slot 4: row 0 explores
    buf.explored(np.array([0]), np.array([4]))
    add(buf, [1, 2], [0.3, 0.2])  # slots 5, 6
    add(buf, [0], [0.6])  # slot 7
    credit(buf, [0, 1, 2, 3], [2.0, -2.0, 1.0, -1.0], terminals=[True] * 4)
    assert np.flatnonzero(buf.off_policy).tolist() == [2, 4]
    batch = buf.pack(gamma, lam)
    assert batch.rows.reshape(-1).tolist() == [0, 0, 0, 1, 1, 2, 2, 3]
    adv = dict(zip([0, 4, 7, 2, 5, 1, 6, 3], batch.advantage.reshape(-1).tolist()))
    mask = dict(zip([0, 4, 7, 2, 5, 1, 6, 3], batch.mask.reshape(-1).tolist()))
    assert [mask[k] for k in range(8)] == [1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 1.0]
    assert adv[0] == pytest.approx(0.4 - 0.5), "row 0: one step to the explored state's value, no further"
    assert adv[4] == 0.0 and adv[2] == 0.0
    assert adv[7] == pytest.approx(2.0 - 0.6) and adv[5] == pytest.approx(-2.0 - 0.3), "after it: on-policy"
    assert adv[1] == pytest.approx((0.2 - 0.1) + gamma * lam * (1.0 - 0.2)), "game 1: the full trace"
    assert adv[3] == pytest.approx(-1.0 + 0.1)


def test_an_explorer_whose_opponent_has_not_acted_in_this_game_leaves_its_old_game_alone():
    buf = make_buffer(capacity=4, horizon=2, num_rows=2)
    add(buf, [0, 1], [0.5, 0.2])
    credit(buf, [0, 1], [1.0, -1.0], terminals=[True, True])
    add(buf, [1], [0.3], starts=[True])  # row 1 opens the next game, exploring
    buf.explored(np.array([1]), np.array([2]))
    assert np.flatnonzero(buf.off_policy).tolist() == [2], "row 0's last step ended its game before"


def leduc_trainer(share: float, call_logit: float = 30.0, *extra: str):
    cfg = load_config(
        Path("configs/leduc.ini"),
        ["--env.num-games", "256", "--train.batch-size", "8192", "--train.explore-share", str(share), *extra],
    )
    trainer = build_trainer(cfg, None)
    with torch.no_grad():  # a policy that calls (always, at 30): explored decisions stand out
        actor = trainer.policy.actor
        actor.weight.zero_()
        actor.bias.zero_()
        actor.bias[CALL] = call_logit
    return trainer


def explored_actions(trainer) -> tuple[np.ndarray, torch.Tensor, torch.Tensor, dict]:
    """One epoch's rollout: the explored slots, their actions, their legal masks, the rollout's stats."""
    buffer = trainer.learner.buffer
    explored = []
    mark = buffer.explored
    buffer.explored = lambda rows, slots: (explored.append(slots[slots < buffer.capacity]), mark(rows, slots))
    stats = trainer.collect(trainer.sampler.params_tensor())
    slots = np.concatenate(explored)
    obs, actions = buffer.obs[torch.from_numpy(slots)], buffer.actions[torch.from_numpy(slots), 0]
    legal = obs[:, trainer.policy.legal_offset : trainer.policy.legal_offset + trainer.policy.num_actions] > 0
    return slots, actions, legal, stats


def test_a_leduc_rollout_explores_its_share_uniformly_and_trains_on_policy_only():
    trainer = leduc_trainer(0.2)
    buffer = trainer.learner.buffer
    slots, actions, legal, stats = explored_actions(trainer)
    assert 0.17 < len(slots) / buffer.size < 0.23, "a fifth of the learner's decisions explore"
    assert buffer.explored_steps == len(slots) and stats["sampler/rollout_entropy"] < 1e-3, "the policy's own"
    assert buffer.off_policy[slots].all() and 0.25 < buffer.off_policy.mean() < 0.45, "with the other seat's steps"
    assert legal.gather(1, actions[:, None]).all(), "explored actions are legal"
    three = legal.sum(1) == 3
    shares = torch.bincount(actions[three], minlength=3).float() / three.sum()
    assert shares.min() > 0.27 and shares.max() < 0.40, f"uniform among three legal actions: {shares}"
    calls = buffer.actions[: buffer.size, 0] == CALL
    kept = torch.from_numpy(~buffer.off_policy[: buffer.size])
    assert calls[kept].float().mean() > 0.99, "every other decision is the policy's"
    batch = buffer.pack(trainer.cfg.train.gamma, trainer.cfg.train.gae_lambda)
    off = torch.from_numpy(buffer.off_policy[np.argsort(buffer.rows, kind="stable")])  # in packed order
    assert torch.equal(batch.mask.reshape(-1)[off], torch.zeros(int(off.sum()))), "off-policy steps leave the loss"


def test_a_tempered_exploring_draw_is_the_policys_own_flattened():
    """The policy calls with logit 3 over 0 for fold and raise: p(call) = e^3 / (e^3 + 2) = 0.91 where
    all three are legal. Drawn at temperature 3 it is e / (e + 2) = 0.58, fold and raise 0.21 each."""
    trainer = leduc_trainer(0.5, 3.0, "--train.explore-temperature", "3")
    _, actions, legal, _ = explored_actions(trainer)
    assert legal.gather(1, actions[:, None]).all(), "explored actions are legal"
    three = legal.sum(1) == 3
    shares = torch.bincount(actions[three], minlength=3).float() / three.sum()
    assert three.sum() > 400 and abs(float(shares[CALL]) - np.e / (np.e + 2)) < 0.06, f"tempered: {shares}"
    assert shares.min() > 0.15, f"fold and raise drawn too: {shares}"


@pytest.mark.parametrize("value", ["1", "-0.1", "1.5"])
def test_a_bad_explore_share_is_refused_by_name(value):
    with pytest.raises(ConfigError, match=r"\[train\] explore_share.*must be in \[0, 1\)"):
        load_config(Path("configs/leduc.ini"), ["--train.explore-share", value])


@pytest.mark.parametrize("value", ["0.5", "-1"])
def test_a_bad_explore_temperature_is_refused_by_name(value):
    with pytest.raises(ConfigError, match=r"\[train\] explore_temperature.*must be 0 \(a uniform draw\) or >= 1"):
        load_config(Path("configs/leduc.ini"), ["--train.explore-temperature", value])


@pytest.mark.parametrize(
    ("flag", "value", "name", "bad"),
    [("--explore", "0.2", "explore_share 0.2", "1.5"), ("--own-reach-cap", "5", "own_reach_cap 5", "0.5")],
)
def test_bench_train_prices_a_variant_against_the_same_config_without_it(tmp_path, capsys, flag, value, name, bad):
    """Exploration's cost, and counterfactual weighting's (counterfactual.py), as SPS ratios."""
    out = tmp_path / "cost.json"
    small = ["--env.num-games", "128", "--train.batch-size", "2048", "--train.minibatch-size", "512"]
    argv = ["train", "--config", "configs/leduc.ini", "--epochs", "1", flag, value, "--json", str(out), *small]
    assert bench_main(argv) == 0
    figures = json.loads(out.read_text())
    assert figures["variant"] == name and figures["sps_plain"] > 0 and figures["sps_variant"] > 0
    assert figures["ratio"] == pytest.approx(figures["sps_variant"] / figures["sps_plain"])
    assert f"the cost of {name}" in capsys.readouterr().out
    assert bench_main(["train", "--config", "configs/leduc.ini", "--epochs", "1", flag, bad]) == 2
    assert name.split()[0] in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "key", "on", "off"),
    [
        ({"explore": 0.2}, "explore_share", 0.2, 0.0),
        ({"own_reach_cap": 3.0}, "own_reach_cap", 3.0, 0.0),
        ({"magnet": "ema"}, "magnet_coef_initial", 0.1, 0.0),
    ],
)
def test_bench_train_compares_with_the_variant_off_even_where_the_config_sets_it(flags, key, on, off):
    """leduc.ini explores and weighs by own reach: the plain side must be the config without them."""
    args = argparse.Namespace(**({"magnet": None, "explore": None, "own_reach_cap": None} | flags))
    _, with_it, without_it = bench_train.variant(args)
    read = {"on": with_it, "off": without_it}
    for side, expected in (("on", on), ("off", off)):
        assert getattr(load_config(Path("configs/leduc.ini"), read[side]).train, key) == expected, side


def test_an_exploring_run_resumes_bit_identically_and_explores(tmp_path):
    """The draws are a stream of the seed and the epoch: a resumed epoch draws what the straight run drew."""
    runs = {}
    for share in ("0.3", "0.0"):
        base = tmp_path / share
        run = [*KUHN_RUN, "--train.explore-share", share, "--base.experiments-dir", str(base)]
        assert train_cli.main(run) == 0
        (runs[share],) = [p for p in base.iterdir() if p.is_dir()]
    base = tmp_path / "0.3"
    resume = ["--resume-checkpoint", str(runs["0.3"] / "model_kuhn_000004.pt"), "--resume-load-optimizer"]
    assert (
        train_cli.main([*KUHN_RUN, "--train.explore-share", "0.3", "--base.experiments-dir", str(base), *resume]) == 0
    )
    (resumed,) = [p for p in base.iterdir() if p.is_dir() and p != runs["0.3"]]
    a, b, plain = (
        torch.load(r / "model_kuhn_000008.pt", weights_only=True) for r in (runs["0.3"], resumed, runs["0.0"])
    )
    for key in ("policy", "optimizer", "rng", "run_state"):
        assert_same(a[key], b[key], key)
    assert not torch.equal(a["policy"]["actor.bias"], plain["policy"]["actor.bias"]), "exploring changed the training"
