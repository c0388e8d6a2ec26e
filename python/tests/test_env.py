"""The env contract: C/Python layout agreement, determinism, legality, hidden information,
terminals and rewards, episode infos, vector backends, the PettingZoo adapter, rendering and
card-data validation."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import textwrap

import numpy as np
import pufferlib.vector
import pytest

from helpers.float32_rows import float32_rows
from tcgleague.games.emberfront.bots import greedy_actions, random_actions
from tcgleague.games.emberfront.engine import LAYOUT
from tcgleague.games.emberfront.engine.cards import DEFAULT_CARDS, CardDataError, load_card_pool
from tcgleague.games.emberfront.env import (
    EPISODE_FIELDS,
    OBS_SIZE,
    IllegalActionError,
    TCGAECEnv,
    TCGEnv,
    action_space,
    observation_space,
)
from tcgleague.games.emberfront.layout import EFFECTS, LEGAL, OBS_BYTES, features_np, legal_actions, legal_counts

L = LAYOUT
COUNT = L["legal_count_offset"]
W = L["action_width"]
G = {k: L["global_offset"] + v for k, v in L["global_features"].items()}
EF = L["entity_features"]
POS = L["position"]


def entity(obs: np.ndarray, ent: int, feature: str) -> float:
    return obs[L["entity_offset"] + ent * L["entity_width"] + EF[feature]]


def active_rows(env: TCGEnv) -> np.ndarray:
    return np.flatnonzero(env.masks)


def position_index() -> dict:
    """Flat position field name -> index ("game.turn", "p0.hand", "p1.unit7.health", ...)."""
    idx, k = {}, 0
    for name in POS["game"]:
        idx[f"game.{name}"], k = k, k + 1
    for name in POS["pending"]:
        idx[f"pending.{name}"], k = k, k + 1
    for seat in (0, 1):
        for name in POS["player"]:
            idx[f"p{seat}.{name}"], k = k, k + 1
        idx[f"p{seat}.hand"], k = k, k + L["max_hand"]
        idx[f"p{seat}.deck"], k = k, k + L["deck_size"]
        for slot in range(L["front_slots"] + L["back_slots"] + 1):
            for name in POS["unit"]:
                idx[f"p{seat}.unit{slot}.{name}"], k = k, k + 1
    idx["size"] = k
    return idx


PI = position_index()
LEADER = L["front_slots"] + L["back_slots"]


# ---- layout ------------------------------------------------------------------------------------
def test_layout_regions_are_contiguous_and_match_the_spaces():
    assert L["global_offset"] == 0
    assert L["entity_offset"] == L["global_offset"] + L["global_size"]
    assert L["legal_count_offset"] == L["entity_offset"] + L["n_entities"] * L["entity_width"]
    assert L["legal_offset"] == L["legal_count_offset"] + 1
    assert L["effects_offset"] == L["legal_offset"] + L["max_legal"] * L["action_width"]
    assert L["obs_size"] == L["effects_offset"] + L["max_legal"] * len(L["effect_features"]) == OBS_SIZE
    assert L["max_legal"] == 128 and L["action_width"] == 4
    # compact rows: the features up to the legal count as int16, the legal tuples and effects as int8
    assert L["obs_wide_count"] == L["legal_offset"]
    assert L["obs_bytes"] == 2 * L["obs_wide_count"] + (L["obs_size"] - L["obs_wide_count"]) == OBS_BYTES
    assert OBS_BYTES * 3 < OBS_SIZE * 4, "a third of the float32 row's bytes"
    env = TCGEnv(num_games=2)
    assert observation_space().shape == env.single_observation_space.shape == (OBS_BYTES,)
    assert env.observations.shape == (4, OBS_BYTES) and env.observations.dtype == np.uint8
    assert features_np(env.observations).shape == (4, OBS_SIZE)
    assert list(action_space().nvec) == [L["n_action_types"], L["n_a"], L["n_b"], L["n_c"]]
    assert list(env.single_action_space.nvec) == list(action_space().nvec)
    # name dicts cover their regions exactly, values 0..n-1
    for names, size in [
        ("global_features", "global_size"),
        ("entity_features", "entity_width"),
        ("action_types", "n_action_types"),
        ("card_field_index", "card_fields"),
    ]:
        assert sorted(L[names].values()) == list(range(L[size])), names
    assert L["n_a"] == L["n_b"] == L["n_entities"] + 1 and L["none_entity"] == L["n_entities"]
    assert L["none_slot"] == L["front_slots"] + L["back_slots"] and L["n_c"] == L["none_slot"] + 1
    kw0 = EF["kw_" + next(iter(L["keywords"]))]
    assert all(EF["kw_" + k] == kw0 + v for k, v in L["keywords"].items())
    groups = L["entity_groups"]
    sizes = {
        "my_hand": L["max_hand"],
        "my_front": L["front_slots"],
        "my_back": L["back_slots"],
        "my_leader": 1,
        "opp_front": L["front_slots"],
        "opp_back": L["back_slots"],
        "opp_leader": 1,
    }
    start = 0
    for name in ["my_hand", "my_front", "my_back", "my_leader", "opp_front", "opp_back", "opp_leader"]:
        assert groups[name] == start, name
        start += sizes[name]
    assert start == L["n_entities"]
    assert PI["size"] == POS["size"] == len(env.engine.export_position(0))
    assert set(EPISODE_FIELDS) >= {"winner", "first_player", "decisions", "turns", "truncated", "deck0", "deck1"}


_RENDER_LEGAL = re.compile(r"legal actions for seat (\d) \((\d+)\):(.*)")
_RENDER_ACTION = re.compile(r"([A-Z]+)\((\d+),(\d+),(\d+)\)")


def check_semantics(env: TCGEnv, game: int) -> None:
    """The decider's observation agrees with the engine's render and exported position."""
    row = int(active_rows(env)[game])  # one active row per game, in game order
    seat = row - 2 * game
    assert seat in (0, 1)
    obs = features_np(env.observations[row])
    seat_line = _RENDER_LEGAL.search(env.render(game))
    assert int(seat_line.group(1)) == seat
    rendered = [
        (L["action_types"][t.lower()], int(a), int(b), int(c))
        for t, a, b, c in _RENDER_ACTION.findall(seat_line.group(3))
    ]
    assert int(seat_line.group(2)) == len(rendered) == int(obs[COUNT])
    legal, count = legal_actions(env.observations[row][None])
    assert [tuple(x) for x in legal[0, : count[0]].tolist()] == rendered
    assert not legal[0, count[0] :].any()
    pos = env.engine.export_position(game)
    me, opp = f"p{seat}", f"p{1 - seat}"
    assert pos[PI["game.decider"]] == seat and obs[G["seat"]] == seat
    hand = pos[PI[f"{me}.hand_count"]]
    assert obs[G["my_hand"]] == hand and obs[G["opp_hand"]] == pos[PI[f"{opp}.hand_count"]]
    assert obs[G["my_deck"]] == pos[PI[f"{me}.deck_count"]] and obs[G["opp_deck"]] == pos[PI[f"{opp}.deck_count"]]
    present = [entity(obs, L["entity_groups"]["my_hand"] + h, "present") for h in range(L["max_hand"])]
    assert present == [1.0] * hand + [0.0] * (L["max_hand"] - hand)
    cards = [entity(obs, L["entity_groups"]["my_hand"] + h, "card") for h in range(hand)]
    assert cards == pos[PI[f"{me}.hand"] : PI[f"{me}.hand"] + hand]
    for who, group in ((me, "my_front"), (opp, "opp_front")):
        for slot in range(LEADER + 1):
            ent = L["entity_groups"][group] + slot
            assert entity(obs, ent, "card") == pos[PI[f"{who}.unit{slot}.card"]]
            if pos[PI[f"{who}.unit{slot}.card"]]:
                assert entity(obs, ent, "health") == pos[PI[f"{who}.unit{slot}.health"]]
    phase = [p for p, v in L["phases"].items() if v == pos[PI["game.phase"]]][0]
    assert obs[G["phase_" + phase]] == 1.0
    # can_act marks exactly the sources of legal actions
    sources = {a for _, a, _, _ in rendered if a < L["n_entities"]}
    can_act = {e for e in range(L["n_entities"]) if entity(obs, e, "can_act")}
    assert can_act == sources


def test_observation_agrees_with_render_and_position():
    env = TCGEnv(num_games=8, seed=11)
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    for step in range(400):
        if step % 5 == 0:
            for game in range(env.num_games):
                check_semantics(env, game)
        env.step(random_actions(obs, rng))


# ---- determinism ---------------------------------------------------------------------------------
def run_hashes(seed: int, games: int = 16, steps: int = 625, shaping: float = 0.0) -> list[str]:
    env = TCGEnv(num_games=games, seed=seed, reward_shaping=shaping)
    obs, _ = env.reset()
    rng = np.random.default_rng(1234)
    hashes = [hashlib.sha1(obs.tobytes()).hexdigest()]
    for _ in range(steps):
        assert env.masks.reshape(-1, 2).sum(axis=1).tolist() == [1] * games
        env.step(random_actions(obs, rng))
        h = hashlib.sha1(obs.tobytes())
        for buf in (env.rewards, env.terminals, env.truncations, env.masks):
            h.update(buf.tobytes())
        hashes.append(h.hexdigest())
    return hashes


def test_same_seed_same_trajectory_different_seed_differs():
    a, b = run_hashes(7), run_hashes(7)  # 16 games x 625 steps = 10,000 decisions each
    assert len(a) == 626
    first_diff = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
    assert first_diff is None, f"trajectories diverge at step {first_diff}"
    c = run_hashes(8, steps=20)
    assert c[0] != a[0] and all(x != y for x, y in zip(a[1:21], c[1:]))


# ---- legal lists ---------------------------------------------------------------------------------
# SHA-256 of the deciding rows' observations over 100,352 random-legal positions (1024 games,
# seed 11), recorded from the engine whose effects copied the game and recomputed its legal
# list after every step of every legal action, when rows were float32 with the legal count after
# the tuples: a faster engine must write the same features, and the compact rows must hold them
# exactly (their features, in that old order, hash to the same digest).
OBSERVATIONS_DIGEST = "6b3a084a334f3372700c91b97b8cca3a0f101898197abc4cb5b48d5bd4980892"


def test_observations_of_100k_random_positions_are_bit_identical_to_the_recorded_engine():
    env = TCGEnv(num_games=1024, seed=11, reward_shaping=0.1)
    obs, _ = env.reset()
    rng = np.random.default_rng(11)
    actions = np.zeros((env.num_agents, 4), dtype=np.int32)
    digest, seen, effects_seen = hashlib.sha256(), 0, 0
    while seen < 100_000:
        rows = np.flatnonzero(env.masks)
        recorded_form = float32_rows(obs[rows])
        digest.update(recorded_form.tobytes())
        seen += len(rows)
        effects_seen += int(np.count_nonzero(recorded_form[:, -(EFFECTS.stop - EFFECTS.start) :]))
        actions[rows] = random_actions(obs, rng, rows)
        obs, *_ = env.step(actions)
    assert effects_seen > seen, "the positions carry effects: the digest covers them"
    assert digest.hexdigest() == OBSERVATIONS_DIGEST


def test_legal_list_bounded_and_every_listed_action_accepted():
    env = TCGEnv(num_games=64, seed=3)
    obs, _ = env.reset()
    probe = TCGEnv(num_games=1, seed=99)
    probe.reset()
    rng = np.random.default_rng(5)
    max_seen, probed = 0, 0
    for step in range(300):
        rows = active_rows(env)
        counts = legal_counts(obs, rows)
        assert len(rows) == env.num_games and (counts >= 1).all() and (counts <= L["max_legal"]).all()
        max_seen = max(max_seen, int(counts.max()))
        if step % 20 == 0:  # every listed action of a few games is accepted, each from the same position
            for game in range(0, env.num_games, 8):
                row = rows[game]
                pos = env.engine.export_position(game)
                legal, count = legal_actions(obs[row][None])
                for i in range(int(count[0])):
                    probe.engine.import_position(0, pos)
                    prow = active_rows(probe)[0]
                    assert prow % 2 == row % 2
                    assert np.array_equal(probe.observations[prow], obs[row]), "position round trip changed the obs"
                    actions = np.zeros((2, W), dtype=np.int32)
                    actions[prow] = legal[0, i]
                    probe.step(actions)
                    probed += 1
        env.step(random_actions(obs, rng))
    assert probed > 500 and max_seen > 5


def test_illegal_action_is_refused_and_moves_nothing():
    env, twin = TCGEnv(num_games=3, seed=21), TCGEnv(num_games=3, seed=21)
    env.reset(), twin.reset()
    rng = np.random.default_rng(0)
    for _ in range(30):  # get into the middle of the games
        actions = random_actions(env.observations, rng)
        env.step(actions), twin.step(actions)
    actions = random_actions(env.observations, rng)
    inactive = np.setdiff1d(np.arange(6), active_rows(env))
    actions[inactive] = 77  # garbage in inactive rows is ignored
    before = (
        env.observations.copy(),
        env.masks.copy(),
        env.rewards.copy(),
        [env.engine.export_position(g) for g in range(3)],
        env.render(1),
    )
    row = active_rows(env)[1]
    legal, count = legal_actions(env.observations[row][None])
    bad = np.array([L["action_types"]["attack"], 0, 0, 0], dtype=np.int32)
    assert not any((legal[0, : count[0]] == bad).all(axis=1))
    refused = actions.copy()
    refused[row] = bad
    with pytest.raises(IllegalActionError) as err:
        env.step(refused)
    msg = str(err.value)
    assert "game 1" in msg and "(3, 0, 0, 0)" in msg and f"{int(count[0])} legal actions" in msg
    assert np.array_equal(env.observations, before[0]) and np.array_equal(env.masks, before[1])
    assert np.array_equal(env.rewards, before[2]) and env.render(1) == before[4]
    assert [env.engine.export_position(g) for g in range(3)] == before[3]
    with pytest.raises(ValueError, match=f"position has 5 values, expected {POS['size']}"):
        env.engine.import_position(0, np.zeros(5, dtype=np.int64))
    # the refusal consumed no randomness: the same legal step matches a twin that never saw it
    env.step(actions), twin.step(actions)
    assert np.array_equal(env.observations, twin.observations)


# ---- hidden information --------------------------------------------------------------------------
def test_observation_hides_opponent_hand_and_both_decks():
    env = TCGEnv(num_games=1, seed=5)
    obs, _ = env.reset()
    pool = env.pool
    deck_cards = sorted({int(c) for c in pool.decks.ravel()})
    rng = np.random.default_rng(3)
    checked = {0: 0, 1: 0}
    for step in range(600):
        if step % 3 == 0:
            pos = env.engine.export_position(0)
            seat = pos[PI["game.decider"]]
            env.engine.import_position(0, pos)
            baseline = env.observations[seat].copy()
            secret = list(pos)
            opp = f"p{1 - seat}"
            for who, zone, count in (
                (opp, "hand", "hand_count"),
                (opp, "deck", "deck_count"),
                (f"p{seat}", "deck", "deck_count"),
            ):
                for k in range(pos[PI[f"{who}.{count}"]]):
                    held = pos[PI[f"{who}.{zone}"] + k]
                    secret[PI[f"{who}.{zone}"] + k] = int(rng.choice([c for c in deck_cards if c != held]))
            if secret != pos:
                env.engine.import_position(0, secret)
                assert np.array_equal(env.observations[seat], baseline), f"hidden cards leak (seat {seat}, step {step})"
                checked[seat] += 1
                # control: my own hand IS visible, so changing it must change the observation
                hand = PI[f"p{seat}.hand"]
                if pos[PI[f"p{seat}.hand_count"]]:
                    visible = list(pos)
                    visible[hand] = next(c for c in deck_cards if c != pos[hand])
                    env.engine.import_position(0, visible)
                    assert not np.array_equal(env.observations[seat], baseline)
            env.engine.import_position(0, pos)
        env.step(random_actions(obs, rng))
    assert checked[0] > 10 and checked[1] > 10


# ---- terminals, rewards, infos -------------------------------------------------------------------
INFO_KEYS = (
    set(EPISODE_FIELDS)
    | {f"seat{s}_{a}" for s in (0, 1) for a in L["action_types"]}
    | {"draw", "deck0_name", "deck1_name", "noop_rate"}
)


def play_until_episodes(env: TCGEnv, episodes: int, rng, max_steps: int = 5000):
    """Yields (step result, ended games, infos) per step until `episodes` games have ended."""
    obs, _ = env.reset()
    seen = 0
    for _ in range(max_steps):
        result = env.step(random_actions(obs, rng))
        ended = np.flatnonzero((env.terminals | env.truncations).reshape(-1, 2).any(axis=1))
        yield ended, result[4]
        seen += len(ended)
        if seen >= episodes:
            return
    raise AssertionError(f"only {seen} episodes ended in {max_steps} steps")


@pytest.mark.parametrize("turn_cap", [L["default_turn_cap"], 4])
def test_game_end_gives_both_rows_terminal_and_final_reward(turn_cap):
    env = TCGEnv(num_games=32, seed=1, turn_cap=turn_cap)
    steps_in_game = np.zeros(32, dtype=np.int64)
    outcomes = {"terminal": 0, "truncated": 0}
    for ended, infos in play_until_episodes(env, 60, np.random.default_rng(2)):
        steps_in_game += 1
        assert len(infos) == len(ended)
        done = (env.terminals | env.truncations).reshape(-1, 2)
        assert (done[:, 0] == done[:, 1]).all(), "both rows of a game end together"
        assert not (env.terminals & env.truncations).any()
        for g, info in zip(ended, infos):
            r = env.rewards[2 * g : 2 * g + 2]
            assert set(info) == INFO_KEYS
            assert info["decisions"] == steps_in_game[g] == sum(info[k] for k in INFO_KEYS if k.startswith("seat"))
            assert info["truncated"] == int(env.truncations[2 * g]) == int(not env.terminals[2 * g])
            assert info["draw"] == int(info["winner"] == 2)
            expected = [0.0, 0.0] if info["winner"] == 2 else [1.0 if info["winner"] == s else -1.0 for s in (0, 1)]
            assert r.tolist() == expected and r.sum() == 0
            assert info["deck0_name"] in env.pool.deck_names and info["first_player"] in (0, 1)
            assert 0.0 <= info["noop_rate"] <= 1.0 and info["turns"] <= 2 * turn_cap + info["truncated"]
            if info["truncated"]:  # the counter records the turn that would have begun past the cap
                assert info["turns"] == 2 * turn_cap + 1 and info["winner"] == 2
            outcomes["truncated" if info["truncated"] else "terminal"] += 1
            steps_in_game[g] = 0
        not_done = np.repeat(~done.any(axis=1), 2)
        assert (env.rewards[not_done] == 0).all()
    if turn_cap == 4:
        assert outcomes["truncated"] > 0
    else:
        assert outcomes["terminal"] > 0


def test_reward_shaping_changes_rewards_but_keeps_terminal_and_dynamics():
    plain = TCGEnv(num_games=16, seed=4)
    shaped = TCGEnv(num_games=16, seed=4, reward_shaping=0.5)
    late = TCGEnv(num_games=16, seed=4)
    late.set_reward_shaping(0.5)
    envs = (plain, shaped, late)
    for e in envs:
        e.reset()
    rng = np.random.default_rng(9)
    totals, episodes, differed = np.zeros(32), 0, False
    for _ in range(1000):
        actions = random_actions(plain.observations, rng)
        for e in envs:
            e.step(actions)
        assert np.array_equal(plain.observations, shaped.observations)
        assert np.array_equal(plain.terminals, shaped.terminals)
        assert np.array_equal(plain.truncations, shaped.truncations)
        assert np.array_equal(shaped.rewards, late.rewards)
        differed |= not np.array_equal(plain.rewards, shaped.rewards)
        totals += shaped.rewards
        done = plain.terminals | plain.truncations
        # potential-based shaping telescopes: an episode's shaped return is its outcome
        np.testing.assert_allclose(totals[done], plain.rewards[done], atol=1e-4)
        assert set(plain.rewards[done].tolist()) <= {-1.0, 0.0, 1.0}
        episodes += int(done.sum())
        totals[done] = 0.0
    assert differed and episodes >= 20


# ---- vector backends -------------------------------------------------------------------------------
def drive_vecenv(vecenv, games_per_env: int, steps: int, seed: int = 0) -> list[str]:
    obs, _ = vecenv.reset(seed=seed)
    rng = np.random.default_rng(seed)
    hashes, episodes = [], 0
    for _ in range(steps):
        actions = random_actions(obs, rng)
        vecenv.send(actions)
        obs, rewards, terminals, truncations, _, infos, _, masks = vecenv.recv()
        masks = np.asarray(masks).reshape(-1, 2)
        assert (masks.sum(axis=1) == 1).all(), "exactly one active row per game"
        active = np.flatnonzero(masks.ravel())
        assert (legal_counts(obs, active) >= 1).all()
        episodes += len(infos)
        hashes.append(hashlib.sha1(obs.tobytes() + np.asarray(rewards).tobytes()).hexdigest())
    assert episodes > 0
    return hashes


ENV_KWARGS = {"num_games": 8, "turn_cap": 6}


def test_vector_serial_backend():
    vecenv = pufferlib.vector.make(TCGEnv, backend=pufferlib.vector.Serial, num_envs=2, env_kwargs=ENV_KWARGS)
    try:
        serial = drive_vecenv(vecenv, 8, 150)
    finally:
        vecenv.close()
    # the same as stepping the two envs by hand with the seeds the backend gives them
    envs = [TCGEnv(**ENV_KWARGS) for _ in range(2)]
    obs = np.concatenate([e.reset(seed=i)[0] for i, e in enumerate(envs)])
    rng = np.random.default_rng(0)
    for h in serial:
        actions = random_actions(obs, rng)
        for i, e in enumerate(envs):
            e.step(actions[16 * i : 16 * i + 16])
        obs = np.concatenate([e.observations for e in envs])
        assert h == hashlib.sha1(obs.tobytes() + np.concatenate([e.rewards for e in envs]).tobytes()).hexdigest()


def test_vector_multiprocessing_backend():
    # In a subprocess with a timeout: a worker that dies would leave recv() spinning forever.
    code = textwrap.dedent(f"""
        import pufferlib.vector
        from tcgleague.games.emberfront.env import TCGEnv
        from test_env import drive_vecenv
        kw = {ENV_KWARGS!r}
        mp = pufferlib.vector.make(TCGEnv, backend=pufferlib.vector.Multiprocessing, num_envs=2, num_workers=2,
                                   env_kwargs=kw, overwork=True)
        try:
            a = drive_vecenv(mp, 8, 60)
        finally:
            mp.close()
        s = pufferlib.vector.make(TCGEnv, backend=pufferlib.vector.Serial, num_envs=2, env_kwargs=kw)
        b = drive_vecenv(s, 8, 60)
        assert a == b, "Multiprocessing and Serial disagree"
        print("MP-OK", len(a))
    """)
    import os

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0 and "MP-OK 60" in proc.stdout, proc.stderr[-3000:]


# ---- PettingZoo adapter ----------------------------------------------------------------------------
def test_aec_adapter_passes_pettingzoo_api_test():
    from pettingzoo.test import api_test

    api_test(TCGAECEnv(), num_cycles=1000)


def test_aec_adapter_plays_games_to_the_end():
    rng = np.random.default_rng(0)
    ends = set()
    for game in range(6):
        env = TCGAECEnv(turn_cap=8 if game % 2 else L["default_turn_cap"])
        env.reset(seed=game)
        assert env.agents == ["player_0", "player_1"]
        totals = {a: 0.0 for a in env.agents}
        finished = []
        for agent in env.agent_iter(10_000):
            obs, reward, term, trunc, info = env.last()
            totals[agent] += reward
            if term or trunc:
                finished.append(agent)
                ends.add("truncated" if trunc else "terminated")
                assert set(info) == INFO_KEYS and not obs["action_mask"].any()
                env.step(None)
                continue
            o = obs["observation"]
            assert o[G["seat"]] == env.possible_agents.index(agent), "agent_selection is the deciding seat"
            n = int(o[COUNT])
            assert obs["action_mask"].dtype == np.int8 and obs["action_mask"].tolist() == [1] * n + [0] * (128 - n)
            other = env.observe(env.possible_agents[1 - env.possible_agents.index(agent)])
            assert not other["action_mask"].any()
            if game == 0 and len(finished) == 0 and rng.random() < 0.05:
                with pytest.raises(IllegalActionError):
                    env.step(n)
            env.step(int(rng.integers(n)))
        assert sorted(finished) == ["player_0", "player_1"] and env.agents == []
        assert sum(totals.values()) == 0 and set(totals.values()) <= {-1.0, 0.0, 1.0}
        assert env.render().startswith("game over")
    assert ends == {"truncated", "terminated"}


# ---- rendering ---------------------------------------------------------------------------------------
def test_render_mentions_both_leaders():
    env = TCGEnv(num_games=2, seed=0)
    env.reset()
    for game in range(2):
        env.set_deal(game, 100 + game, game, (game + 1) % len(env.pool.deck_names))
        pos = env.engine.export_position(game)
        text = env.render(game)
        for seat in (0, 1):
            leader = env.pool.name(pos[PI[f"p{seat}.unit{LEADER}.card"]])
            assert leader in text and f"seat {seat}: {leader}" in text
    aec = TCGAECEnv()
    aec.reset(seed=0)
    pos = aec.tcg.engine.export_position(0)
    assert all(aec.tcg.pool.name(pos[PI[f"p{s}.unit{LEADER}.card"]]) in aec.render() for s in (0, 1))


def test_greedy_bot_returns_legal_actions():
    env = TCGEnv(num_games=8, seed=2)
    env.reset()
    for _ in range(100):
        env.step(greedy_actions(env))  # would raise IllegalActionError


def test_greedy_bot_on_a_subset_of_rows_matches_the_full_search():
    env = TCGEnv(num_games=8, seed=3)
    env.reset()
    for _ in range(30):
        full = greedy_actions(env)
        active = np.flatnonzero(env.masks)
        some = active[::3]
        assert np.array_equal(greedy_actions(env, some), full[some])
        env.step(full)
    with pytest.raises(IndexError, match="out of range"):
        greedy_actions(env, np.array([16]))


# ---- card data validation ----------------------------------------------------------------------------
def write_cards(tmp_path, edit):
    data = json.loads(DEFAULT_CARDS.read_text())
    edit(data)
    path = tmp_path / "cards.json"
    path.write_text(json.dumps(data))
    return path


def test_unmodified_card_copy_loads(tmp_path):
    pool = load_card_pool(write_cards(tmp_path, lambda d: None))
    assert pool.n_cards == load_card_pool().n_cards and len(pool.deck_names) >= 2


def test_unknown_keyword_names_the_card(tmp_path):
    data = json.loads(DEFAULT_CARDS.read_text())
    card = next(c for c in data["cards"] if c["type"] == "unit")

    def edit(d):
        next(c for c in d["cards"] if c["id"] == card["id"])["keywords"] = ["flying"]

    with pytest.raises(CardDataError, match=re.escape(f"card {card['id']} ({card['name']})") + ".*flying"):
        load_card_pool(write_cards(tmp_path, edit))


def test_bad_deck_size_names_the_deck(tmp_path):
    name = next(iter(json.loads(DEFAULT_CARDS.read_text())["decks"]))

    def edit(d):
        d["decks"][name]["cards"].pop()

    with pytest.raises(CardDataError, match=f"deck '{name}' has {L['deck_size'] - 1} cards"):
        load_card_pool(write_cards(tmp_path, edit))


def test_chosen_target_with_automatic_trigger_names_the_card(tmp_path):
    data = json.loads(DEFAULT_CARDS.read_text())
    chosen_ok = {"on_play", "activated", "spell", "response"}
    card = next((c for c in data["cards"] if c.get("effect") and c["effect"]["trigger"] not in chosen_ok), None)
    if card is None:  # no such card today: give a vanilla unit a death trigger
        card = next(c for c in data["cards"] if c["type"] == "unit" and not c.get("effect"))

    def edit(d):
        c = next(c for c in d["cards"] if c["id"] == card["id"])
        c["effect"] = dict(c.get("effect") or {"trigger": "on_death", "op": "damage", "amount": 1}, target="enemy_unit")

    with pytest.raises(CardDataError, match=re.escape(f"card {card['id']} ({card['name']})") + ".*chosen target"):
        load_card_pool(write_cards(tmp_path, edit))


def test_legal_list_is_zero_beyond_its_count_on_every_row():
    """The engine clears only the row's previous list (speed); nothing stale may survive."""
    env = TCGEnv(num_games=32, seed=4)
    obs, _ = env.reset()
    rng = np.random.default_rng(4)
    for _ in range(300):
        obs, *_ = env.step(random_actions(obs, rng))
        f = features_np(obs)
        counts = f[:, COUNT].astype(int)  # inactive rows keep their last observation
        assert (counts[env.masks] > 0).all()
        for row, n in enumerate(counts):
            assert not f[row, LEGAL][4 * n :].any(), f"stale legal entries in row {row}"
            assert not f[row, EFFECTS][len(L["effect_features"]) * n :].any(), f"stale effects in row {row}"


def snapshot(env: TCGEnv):
    return env.observations.copy(), env.masks.copy(), [env.engine.export_position(g) for g in range(env.num_games)]


@pytest.mark.parametrize(
    "value",
    [
        -4294967272,  # int64 that a bare int32 cast wraps to a legal-looking 24
        2**40,
        -1,
        0.5,  # fractional: a cast would truncate it and play 0
        np.nan,
        np.inf,
        -np.inf,
    ],
)
def test_action_values_that_are_not_integers_in_range_are_refused_and_move_nothing(value):
    env = TCGEnv(num_games=2, seed=3)
    env.reset()
    row = active_rows(env)[0]
    actions = random_actions(env.observations, np.random.default_rng(0)).astype(np.float64)
    actions[row, 1] = actions[row, 1] + 0.5 if value == 0.5 else value  # a legal value + 0.5
    before = snapshot(env)
    with pytest.raises(
        IllegalActionError, match=rf"row {row} \(game {row // 2}, seat {row % 2}\).*integer in \[0, size\)"
    ):
        env.step(actions)
    after = snapshot(env)
    assert np.array_equal(before[0], after[0]) and np.array_equal(before[1], after[1]) and before[2] == after[2]


def test_int64_wraparound_is_refused_before_any_cast():
    env = TCGEnv(num_games=2, seed=3)
    env.reset()
    actions = random_actions(env.observations, np.random.default_rng(0)).astype(np.int64)
    row = active_rows(env)[1]
    actions[row, 0] = -4294967272  # == 24 after a wrapping int32 cast
    with pytest.raises(IllegalActionError, match=f"row {row}"):
        env.step(actions)


def test_integral_actions_of_any_numeric_dtype_play_the_same_game():
    games = [TCGEnv(num_games=3, seed=9) for _ in range(3)]
    for env in games:
        env.reset()
    rng = np.random.default_rng(1)
    for _ in range(40):
        actions = random_actions(games[0].observations, rng)
        for env, dtype in zip(games, (np.int32, np.int64, np.float32)):
            env.step(actions.astype(dtype))
    assert np.array_equal(games[0].observations, games[1].observations)
    assert np.array_equal(games[0].observations, games[2].observations)


def test_a_wrong_shape_or_dtype_is_a_type_error():
    env = TCGEnv(num_games=2, seed=3)
    env.reset()
    actions = random_actions(env.observations, np.random.default_rng(0))
    with pytest.raises(TypeError, match=r"shape \(4, 4\)"):
        env.step(actions[:3])
    with pytest.raises(TypeError, match="dtype"):
        env.step(actions.astype(str))
    with pytest.raises(TypeError, match="dtype"):
        env.step(actions.astype(bool))


@pytest.mark.parametrize("index", [np.inf, 0.5, -1, "1", [0], None, 10**6])
def test_aec_refuses_action_indices_that_are_not_integers_in_range(index):
    aec = TCGAECEnv()
    aec.reset(seed=0)
    agent = aec.agent_selection
    before = aec.observe(agent)["observation"].copy()
    with pytest.raises(IllegalActionError, match="action index"):
        aec.step(index)
    assert aec.agent_selection == agent and np.array_equal(aec.observe(agent)["observation"], before)


def test_aec_accepts_an_integral_float_index():
    a, b = TCGAECEnv(), TCGAECEnv()
    a.reset(seed=0), b.reset(seed=0)
    a.step(0), b.step(np.float64(0.0))
    assert a.agent_selection == b.agent_selection
    assert np.array_equal(a.observe(a.agent_selection)["observation"], b.observe(b.agent_selection)["observation"])
