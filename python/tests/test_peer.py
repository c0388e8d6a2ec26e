"""bench peer: the peers' shared pieces (legal-index actors in our match runner, snapshots, the
PuffeRL policy and advantage stand-in) and one whole bench run with every trainer."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from tcgleague.games.emberfront.layout import COUNT, COUNT_BYTES, MAX_LEGAL, OBS_BYTES, legal_counts
from tcgleague.games.emberfront.peers.pufferl_policy import MASKED, PeerLSTM, puff_advantage
from tcgleague.games.emberfront.peers.shared import LegalIndexActor, SnapshotLog, evaluate_vs_greedy, sample_masked

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def uniform_actor(seed: int):
    generator = torch.Generator().manual_seed(seed)
    chosen: list[np.ndarray] = []

    def choose(obs, masks, rows):
        index = sample_masked(torch.zeros(masks.shape), torch.as_tensor(masks), generator)
        chosen.append(index)
        assert (index < obs[:, COUNT]).all()
        return index

    return LegalIndexActor(choose), chosen


def test_a_legal_index_policy_plays_whole_duplicate_matches_in_our_runner():
    actor, chosen = uniform_actor(0)
    report = evaluate_vs_greedy(lambda rows: actor, episodes=8, seed=3)
    assert report["episodes"] == 8 and 0.0 <= report["wilson_low"] <= report["winrate"] <= report["wilson_high"]
    assert sum(map(len, chosen)) > 8  # many decisions, every one inside its row's legal list


def test_an_index_outside_the_legal_list_is_refused():
    actor = LegalIndexActor(lambda obs, masks, rows: np.full(len(rows), MAX_LEGAL - 1), name="bad")
    obs = np.zeros((2, OBS_BYTES), dtype=np.uint8)
    obs[:, COUNT_BYTES.start] = 3  # three legal tuples listed
    assert legal_counts(obs).tolist() == [3, 3]
    with pytest.raises(RuntimeError, match="bad chose an index outside the legal list"):
        actor.act(obs, np.array([0, 1]))


def test_snapshots_come_every_interval_and_once_past_the_mark(tmp_path):
    log = SnapshotLog(tmp_path, every=100, mark_seconds=5.0)
    taken = []
    for steps, seconds in [(50, 1.0), (100, 2.0), (150, 4.0), (180, 5.5), (190, 6.0), (200, 7.0)]:
        if log.due(steps, seconds):
            log.add(steps, seconds, lambda path: path.write_bytes(b"w"))
            taken.append(steps)
    assert taken == [100, 180, 200]
    assert [s["steps"] for s in json.loads((tmp_path / "snapshots.json").read_text())] == taken


def test_pufferl_policy_masks_illegal_indices_and_steps_like_its_sequence_pass():
    torch.manual_seed(0)
    policy = PeerLSTM(obs_size=COUNT + 5, hidden_size=16)
    obs = torch.randn(3, 4, COUNT + 5)
    obs[..., COUNT] = torch.tensor([1.0, 5.0, 128.0])[:, None]
    logits, values = policy(obs, {})
    assert logits.shape == (12, MAX_LEGAL) and values.shape == (3, 4)
    legal = torch.arange(MAX_LEGAL) < obs[..., COUNT].reshape(12, 1)
    assert (logits[~legal] == MASKED).all() and (logits[legal] > MASKED).all()
    state = {"lstm_h": torch.zeros(3, 16), "lstm_c": torch.zeros(3, 16)}
    for t in range(4):
        step_logits, step_values = policy.forward_eval(obs[:, t], state)
        torch.testing.assert_close(step_logits, logits.reshape(3, 4, -1)[:, t])
        torch.testing.assert_close(step_values, values[:, t])


def test_advantage_stand_in_is_vtrace_clipped_gae_with_rewards_one_step_late():
    values = torch.tensor([[0.5, 0.2, -0.1, 0.3]])
    rewards = torch.tensor([[9.0, 0.0, 1.0, -1.0]])  # reward t+1 belongs to step t; rewards[0] is unused
    dones = torch.tensor([[0.0, 0.0, 1.0, 0.0]])  # step 2 starts a new episode
    gamma, lam = 0.9, 0.8
    ones = torch.ones_like(values)
    adv = puff_advantage(values, rewards, dones, ones, torch.zeros_like(values), gamma, lam, 1.0, 1.0)
    d2 = -1.0 + gamma * 0.3 - (-0.1)
    d1 = 1.0 - 0.2  # the episode ended: no bootstrap from step 2, and no trace through it
    d0 = 0.0 + gamma * 0.2 - 0.5
    torch.testing.assert_close(adv, torch.tensor([[d0 + gamma * lam * d1, d1, d2, 0.0]]))
    halved = puff_advantage(values, rewards, dones, ones * 0.5, torch.zeros_like(values), gamma, lam, 1.0, 1.0)
    torch.testing.assert_close(halved[0, 2], torch.tensor(0.5 * d2))  # rho scales each delta
    clipped = puff_advantage(values, rewards, dones, ones * 3.0, torch.zeros_like(values), gamma, lam, 1.0, 1.0)
    torch.testing.assert_close(clipped, adv)  # importance above the clips counts as 1


@pytest.mark.slow
def test_bench_peer_trains_and_judges_every_trainer(tmp_path):
    pytest.importorskip("sb3_contrib", reason="the [peer] extra")
    pytest.importorskip("rich_argparse", reason="the [peer] extra")
    pytest.importorskip("pyro", reason="the [peer] extra")
    out = tmp_path / "figures.json"
    cmd = [sys.executable, "-m", "tcgleague.bench", "peer", "--config", "configs/smoke.ini", "--steps", "2048"]
    cmd += ["--snapshots", "2", "--episodes", "8", "--out", str(tmp_path / "runs"), "--json", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-2000:]
    figures = json.loads(out.read_text())
    for name in ("ours", "pufferl", "sb3"):
        assert figures[f"sps_{name}"] > 0 and figures[f"steps_{name}"] >= 2048
        assert 0.0 <= figures[f"winrate_vs_greedy_{name}"] <= 1.0
        assert 0.0 <= figures[f"winrate_vs_greedy_at_equal_wall_{name}"] <= 1.0
        assert 0 < figures[f"steps_at_equal_wall_{name}"] <= figures[f"steps_{name}"]
    assert figures["steps_at_equal_wall_ours"] == figures["steps_ours"]
    assert figures["pufferl_advantage"].startswith(("pure-torch stand-in", "pufferlib._C op"))
    assert "win rate at equal steps" in done.stdout


def test_bench_peer_says_what_a_missing_peer_needs(tmp_path, monkeypatch):
    from tcgleague.games.emberfront.peers import bench as peer

    monkeypatch.setitem(peer.PEERS, "sb3", peer.Peer("MaskablePPO", ("-m", "nowhere"), ("no_such_module_for_sure",)))
    monkeypatch.setitem(peer.PEERS, "pufferl", peer.Peer("PuffeRL", ("/no/such/peer.py",), ()))
    args = peer.argparse.Namespace(
        steps=1,
        episodes=2,
        seed=0,
        train_seed=1,
        snapshots=1,
        trainers="sb3,pufferl",
        config="configs/smoke.ini",
        out=tmp_path,
    )
    figures = peer.run(args)
    assert "needs no_such_module_for_sure" in figures["skipped_sb3"] and ".[peer]" in figures["skipped_sb3"]
    assert "needs /no/such/peer.py" in figures["skipped_pufferl"]
    assert "sps_sb3" not in figures and "sps_pufferl" not in figures
