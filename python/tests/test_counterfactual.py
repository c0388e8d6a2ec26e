"""Counterfactual weighting (`[train] own_reach_cap`, counterfactual.py): each decision weighs in
the loss by 1 / its seat's own reach of it, capped, scaled to mean 1; the reach runs per row
across decisions and epochs, restarts with each game, and resumes exactly; off, the mask is 0/1."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers.state_compare import assert_same
from tcgleague.build import build_trainer
from tcgleague.config import ConfigError, load_config
from tcgleague.counterfactual import OwnReach, counterfactual_weights
from test_average import straight_and_resumed
from test_rollout import credit, make_buffer

pytestmark = pytest.mark.usefixtures("one_torch_thread")

HALF = math.log(0.5)


def test_own_reach_multiplies_a_seats_own_probabilities_and_restarts_with_each_game():
    reach = OwnReach(3, torch.device("cpu"))
    rows = torch.tensor([0, 1, 2])
    first = reach.advance(rows, torch.tensor([True, True, True]), torch.tensor([HALF, math.log(0.2), 0.0]))
    assert first.tolist() == [0.0, 0.0, 0.0], "a game's first decision is reached with probability 1"
    second = reach.advance(torch.tensor([0, 1]), torch.tensor([False, True]), torch.tensor([HALF, HALF]))
    assert second.tolist() == pytest.approx([HALF, 0.0]), "row 1 started a new game: its old reach is gone"
    third = reach.advance(torch.tensor([0, 1]), torch.tensor([False, False]), torch.tensor([0.0, 0.0]))
    assert third.tolist() == pytest.approx([2 * HALF, HALF])
    saved = reach.state_dict()
    other = OwnReach(3, torch.device("cpu"))
    other.load_state_dict(saved)
    assert torch.equal(other.log_reach, reach.log_reach), "a resume carries it"
    other.load_state_dict(None)
    assert not other.log_reach.any(), "a checkpoint from before the weighting: every row at 0"


def test_weights_are_one_over_own_reach_capped_and_average_one_over_the_trained_steps():
    log_reach = torch.log(torch.tensor([1.0, 0.5, 0.25, 0.01, 0.01]))
    mask = torch.tensor([1.0, 1.0, 1.0, 1.0, 0.0])
    w = counterfactual_weights(log_reach, mask, cap=5.0)
    raw = torch.tensor([1.0, 2.0, 4.0, 5.0, 0.0])  # 1 / 0.01 capped at 5; the masked step stays out
    assert torch.allclose(w, raw * 4 / raw.sum())
    assert w[mask > 0].mean() == pytest.approx(1.0)
    assert torch.equal(
        counterfactual_weights(torch.zeros(3), torch.tensor([1.0, 0.0, 1.0]), 5.0), torch.tensor([1.0, 0.0, 1.0])
    )


def test_a_packed_batch_carries_the_weights_in_its_mask_and_off_it_is_unchanged():
    """Row 0 plays three decisions of one game at probability 1/2 each (reach 1, 1/2, 1/4), row 1
    one: their weights are 1, 2, 4 and 1, scaled to mean 1."""
    buf = make_buffer(capacity=4, horizon=4, num_rows=2)
    reach = OwnReach(2, torch.device("cpu"))
    for rows, starts in (([0, 1], [True, True]), ([0], [False]), ([0], [False])):
        n = len(rows)
        slots = buf.reserve(np.array(rows), np.array(starts))
        row_t, logprob = torch.tensor(rows), torch.full((n,), HALF)
        buf.store(
            torch.from_numpy(slots), torch.zeros(n, 3), torch.zeros(n, 4, dtype=torch.long), logprob,
            torch.zeros(n), torch.zeros(n, 2), torch.zeros(n, 2), reach.advance(row_t, torch.tensor(starts), logprob),
        )  # fmt: skip
    credit(buf, [0, 1], [1.0, -1.0], terminals=[True, True])
    weighted = buf.pack(1.0, 0.95, own_reach_cap=10.0).mask.reshape(-1)
    assert weighted.tolist() == pytest.approx([v * 4 / 8 for v in (1.0, 2.0, 4.0, 1.0)])  # rows 0, 0, 0, 1
    assert buf.pack(1.0, 0.95).mask.reshape(-1).tolist() == [1.0] * 4, "off: every trained step weighs 1"


def test_a_leduc_rollout_stores_each_decisions_own_reach():
    small = ["--env.num-games", "64", "--train.batch-size", "2048", "--train.minibatch-size", "512"]
    cfg = load_config(Path("configs/leduc.ini"), small)
    trainer = build_trainer(cfg, None)
    trainer.collect(trainer.sampler.params_tensor())
    buffer = trainer.learner.buffer
    reach = buffer.own_log_reach[: buffer.size]
    starts = torch.from_numpy(buffer.episode_start[: buffer.size])
    assert torch.equal(reach[starts], torch.zeros(int(starts.sum()))), "a game's first decision: reach 1"
    later = reach[~starts]
    assert (later <= 0).all() and (later < math.log(0.9)).float().mean() > 0.5, "the product of earlier choices"
    for slot in np.flatnonzero(buffer.has_next[: buffer.size])[:50]:  # within a game, the next adds this one
        nxt = buffer.next_index[slot]
        assert reach[nxt] == pytest.approx(float(reach[slot] + buffer.logprob[slot]), abs=1e-5)


def test_a_weighted_run_resumes_bit_identically(tmp_path):
    _, a, b = straight_and_resumed(tmp_path, ["--train.own-reach-cap", "5"])
    assert a["run_state"]["own_log_reach"].min() < 0, "games were mid-way when it was saved"
    assert_same(a["run_state"], b["run_state"], "run_state")
    assert_same(a["policy"], b["policy"], "policy")


@pytest.mark.parametrize("value", ["0.5", "-1", "inf", "nan"])
def test_a_bad_own_reach_cap_is_refused_by_name(value):
    with pytest.raises(
        ConfigError, match=r"\[train\] own_reach_cap(: expected a finite| = \S+: must be 0 \(off\) or >= 1)"
    ):
        load_config(Path("configs/leduc.ini"), ["--train.own-reach-cap", value])
