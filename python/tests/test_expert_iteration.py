"""Expert iteration ([train] search_coef): the lookahead's moves are stored as targets for a
share of the learner's own decisions, only where the search judged the candidates; searching
leaves the rollout itself alone (the games, the sampled moves); the loss pulls the policy toward
the targets; a searching run resumes exactly; and it is refused where it cannot run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from state_compare import assert_same
from tcgleague.build import build_trainer
from tcgleague.checkpoint import load_checkpoint
from tcgleague.config import ConfigError, load_config
from tcgleague.layout import legal_actions, legal_from_obs
from tcgleague.ppo import unroll
from tcgleague.resume import ResumeOptions, apply_resume
from tcgleague.train import checkpoint_writer
from tcgleague.trainer import Trainer

SMOKE = "configs/smoke.ini"
SEARCH = ("--train.search-coef-initial", "2.0", "--train.search-coef-final", "2.0", "--train.search-fraction", "0.5")

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def smoke_trainer(*overrides: str, run_dir=None) -> Trainer:
    return build_trainer(load_config(SMOKE, ["--train.eval-interval", "0", *overrides]), run_dir)


def collect(trainer: Trainer) -> dict:
    return trainer.collect(trainer.sampler.params_tensor())


def test_targets_are_legal_search_moves_of_a_share_of_the_learners_decisions_and_change_nothing_else():
    searching, plain = smoke_trainer(*SEARCH), smoke_trainer()
    stats = collect(searching)
    collect(plain)
    a, b = searching.buffer, plain.buffer
    for name in ("obs", "actions", "logprob", "value", "state_h", "state_c"):
        assert torch.equal(getattr(a, name), getattr(b, name)), f"searching changed the rollout's {name}"
    assert np.array_equal(a.rows, b.rows) and np.array_equal(a.reward, b.reward)

    taught = a.teacher_mask > 0
    assert 0.2 < taught.mean() < 0.5, "about half the decisions searched, those with a choice judged"
    assert stats["search/target_rate"] == pytest.approx(taught.mean())
    obs = a.obs[: a.capacity].numpy()
    legal, count = legal_actions(obs)
    for i in np.flatnonzero(taught):  # a move from another state would often be illegal
        assert count[i] > 1 and any((legal[i, : count[i]] == a.teacher[i]).all(-1)), i
    changed = (a.teacher[taught] != a.actions[: a.capacity].numpy()[taught]).any(-1).mean()
    assert 0.05 < changed < 0.95 and stats["search/changed_rate"] == pytest.approx(changed)
    assert plain.lookahead is None and not b.teacher_mask.any() and "search/target_rate" not in collect(plain)


def target_nll(trainer: Trainer, batch) -> float:
    """Mean negative log-likelihood of the batch's targets under the current policy."""
    with torch.no_grad():
        out, ent = unroll(trainer.policy, batch.obs, batch.boundary, batch.state_h, batch.state_c)
        legal, count = legal_from_obs(batch.obs.reshape(out.shape[0], -1))
        teacher = batch.teacher.reshape(-1, 4)
        logprob, _ = trainer.sampler.log_prob_entropy(trainer.policy, out, ent, legal, count, teacher)
    taught = (batch.teacher_mask * batch.mask).reshape(-1)
    return float(-(logprob * taught).sum() / taught.sum())


def test_the_search_term_pulls_the_policy_toward_the_targets():
    """Two identical trainers update on the same batch, one with the search term: only its
    policy moves clearly toward the targets, and the loss reports the term."""
    nll, reported = {}, {}
    for coef in (2.0, 0.0):
        trainer = smoke_trainer(*SEARCH)
        collect(trainer)
        t = trainer.cfg.train
        batch = trainer.buffer.pack(t.gamma, t.gae_lambda)
        before = target_nll(trainer, batch)
        coefs = trainer.loss_coefs()
        coefs[4] = coef
        params = trainer.sampler.params_tensor()
        for _ in range(8):
            metrics = trainer.updater.update(batch, params, coefs, trainer.generator)
        nll[coef] = (before, target_nll(trainer, batch))
        reported[coef] = metrics["losses/search_loss"]
    assert nll[2.0][0] == nll[0.0][0]  # the same batch and weights to start from
    taught, untaught = (nll[c][0] - nll[c][1] for c in (2.0, 0.0))  # how far each came toward the targets
    assert taught > 0.03 and taught > 3 * untaught, nll
    assert 0 < reported[2.0] < nll[2.0][0], "the reported term is the targets' NLL during the update"


def test_a_searching_run_resumes_exactly(tmp_path):
    """The searches are picked and salted from (seed, epoch): a resumed run searches the same
    decisions with the same re-deals, so its weights match the straight run's bit for bit."""
    run_dir = tmp_path / "a"
    run_dir.mkdir()
    a = smoke_trainer(*SEARCH, run_dir=run_dir)
    a.train_epoch()
    path = checkpoint_writer(run_dir, a.cfg)(a)
    a.train_epoch()
    b = smoke_trainer(*SEARCH, run_dir=tmp_path / "b")
    apply_resume(b, load_checkpoint(path, b.policy.config), ResumeOptions(str(path), load_optimizer=True))
    b.train_epoch()
    assert_same(a.policy.state_dict(), b.policy.state_dict(), "policy")
    assert_same(a.optimizer.state_dict(), b.optimizer.state_dict(), "optimizer")
    taught = a.buffer.teacher_mask > 0
    assert np.array_equal(taught, b.buffer.teacher_mask > 0) and taught.any()
    assert np.array_equal(a.buffer.teacher[taught], b.buffer.teacher[taught])
    assert a.last_metrics["losses/search_loss"] == b.last_metrics["losses/search_loss"] > 0


def test_search_needs_the_in_process_engine():
    with pytest.raises(ConfigError, match=r"\[train\] search_coef_initial.*backend = native"):
        load_config(SMOKE, ["--train.search-coef-final", "0.5", "--vec.backend", "serial", "--vec.num-envs", "2"])


def test_search_starts_where_its_anneal_says():
    """search_coef annealed from 0: no search (and no cost) before its start step, targets after."""
    trainer = smoke_trainer(
        "--train.search-coef-final", "1.0", "--train.search-coef-anneal-start-step", "512",
        "--train.search-coef-anneal-end-step", "1024",
    )  # fmt: skip
    first = trainer.train_epoch()
    assert "search/target_rate" not in first and not trainer.buffer.teacher_mask.any()
    trainer.train_epoch()  # starts at step 512: the coefficient is still 0 there
    third = trainer.train_epoch()
    assert third["anneal/search_coef"] == 1.0 and third["search/target_rate"] > 0.05
    assert trainer.buffer.teacher_mask.any()
