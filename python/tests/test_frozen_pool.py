"""The frozen pool: members in slots of stacked weights, rows laid out as position grids, one
vmapped call that equals each member deciding alone; and the same call inside the learner's
own step (actors.JointStep), eager here and compiled (slow), with fixed shapes after warm-up."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch._dynamo.utils import counters

from tcgleague.actors import PolicyActor
from tcgleague.games.emberfront.env import TCGEnv
from tcgleague.games.emberfront.layout import features, legal_from_obs
from tcgleague.games.emberfront.policy import PolicyConfig, TCGPolicy, build_policy
from tcgleague.games.emberfront.sampler import UNIFORM_WIDTH, TCGSampler
from tcgleague.league.frozen_pool import FrozenPool, bucket_size
from tcgleague.rows import RowFormat

CPU = torch.device("cpu")
ENV = TCGEnv(num_games=1)


def small_policy(seed: int) -> TCGPolicy:
    config = PolicyConfig(n_cards=ENV.pool.n_cards, card_embed_dim=4, entity_dim=8, hidden_size=8)
    return build_policy(config, seed)


def member_alone(policy, obs_rows, h0, c0, draws, temperature=1.0):
    """One member's own policy.step + sampler on its rows (the reference for the stacked call)."""
    o = features(torch.from_numpy(obs_rows))
    with torch.no_grad():
        x, ent = policy.encode(o)
        out, (h, c) = policy.step(x, (h0, c0))
        legal, count = legal_from_obs(o)
        sampler = TCGSampler(subaction_temperature=temperature)
        actions, _, _ = sampler.sample(policy, out, ent, legal, count, uniforms=draws)
    return actions, h, c


def routed(pool: FrozenPool, who: dict[int, str]) -> None:
    pool.member_of = lambda rows: np.array([who[int(r)] for r in rows], dtype=object)


def test_members_take_slots_and_rows_take_grid_positions():
    env = TCGEnv(num_games=20, seed=0)
    obs, _ = env.reset()
    assert [bucket_size(n, 16) for n in (0, 1, 8, 9, 16, 40)] == [0, 8, 8, 16, 16, 16]
    pool = FrozenPool(RowFormat.of(env), max_batch=16, device=CPU, capacity=2)
    policies = {m: small_policy(k) for k, m in enumerate("mno")}
    for m in "mn":
        pool.add(m, policies[m], TCGSampler())
    assert pool.slots == {"m": 0, "n": 1} and pool.capacity == 2
    assert all(p.requires_grad for p in policies["m"].parameters())  # copies: the caller's object is untouched
    assert not any(w.requires_grad for w in pool.weights.values())
    pool.add("o", policies["o"], TCGSampler())  # no free slot: the stacked weights double, the others are kept
    assert pool.capacity == 4 and pool.slots["o"] == 2
    for m, slot in pool.slots.items():
        for name, p in policies[m].named_parameters():
            assert torch.equal(pool.weights[f"policy.{name}"][slot], p), (m, name)
    rows = np.flatnonzero(env.masks)
    routed(pool, {int(r): "m" if k < 5 else "n" for k, r in enumerate(rows)})
    pool.act(obs, rows[:7])  # 5 rows for m, 2 for n: one round of 8; eager grids stop at the last slot used
    assert [g.shape for g in pool.grids] == [(2, 8)] and pool.forwards == 1
    assert sorted(pool.grids[0][0][:5]) == list(range(5)) and (pool.grids[0][0][5:] == 7).all()  # 7 = padding
    assert pool.state.h[rows[:7]].abs().sum() > 0
    assert not pool.state.h[np.setdiff1d(np.arange(env.num_agents), rows[:7])].any()
    routed(pool, {int(r): "m" for r in rows})
    actions = np.zeros((env.num_agents, 4), dtype=np.int32)
    actions[rows] = pool.act(obs, rows)  # 20 rows for m, max_batch 16: two rounds
    assert [g.shape for g in pool.grids] == [(1, 16), (1, 16)] and pool.forwards == 3
    env.step(actions)  # the members' actions are legal
    pool.remove("n")
    pool.add("p", small_policy(7), TCGSampler())
    assert pool.slots["p"] == 1  # the freed slot is taken again
    with pytest.raises(ValueError, match="share one architecture"):
        pool.add("wide", TCGPolicy(PolicyConfig(n_cards=env.pool.n_cards, hidden_size=16)), TCGSampler())


def test_fixed_shapes_use_every_slot_and_only_grow_the_bucket():
    env = TCGEnv(num_games=40, seed=1)
    obs, _ = env.reset()
    pool = FrozenPool(RowFormat.of(env), max_batch=32, device=CPU, capacity=3, fixed_shapes=True)
    pool.add("m", small_policy(0), TCGSampler())
    rows = np.flatnonzero(env.masks)
    routed(pool, {int(r): "m" for r in rows})
    shapes = []
    for n in (3, 12, 5, 40, 2):
        pool.plan(rows, rows[:n])
        shapes.append([g.shape for g in pool.grids])
    assert shapes == [[(3, 8)], [(3, 16)], [(3, 16)], [(3, 32), (3, 32)], [(3, 32)]]


def test_the_stacked_call_equals_each_member_alone():
    """The vmapped call over stacked weights = each member's own policy.step + sampler with the
    same uniform draws (one per row of the batch, in ascending row order, whatever the members'
    slots and however their rows interleave)."""
    env = TCGEnv(num_games=12, seed=3)
    obs, _ = env.reset()
    rows = np.flatnonzero(env.masks)[:12]
    pool = FrozenPool(RowFormat.of(env), max_batch=64, device=CPU, seed=5)
    members = {"a": small_policy(1), "b": small_policy(2), "c": small_policy(3)}
    for m, policy in members.items():
        pool.add(m, policy, TCGSampler.from_params({"subaction_temperature": 0.5} if m == "b" else None))
    groups = {"c": rows[[2, 4, 5, 7, 8, 10]], "a": rows[[0, 3, 6, 9, 11]], "b": rows[[1]]}
    routed(pool, {int(r): m for m, rs in groups.items() for r in rs})
    pool.state.h.normal_(generator=torch.Generator().manual_seed(0))
    pool.state.c.normal_(generator=torch.Generator().manual_seed(1))
    h0, c0 = pool.state.h.clone(), pool.state.c.clone()
    draws = torch.rand(12, 4, UNIFORM_WIDTH, generator=torch.Generator().manual_seed(5))
    got = pool.act(obs, rows[::-1])[::-1]  # any order of rows asked
    assert pool.forwards == 1
    for m, policy in members.items():
        r = groups[m]
        at = np.searchsorted(rows, r)
        want, h, c = member_alone(policy, obs[r], h0[r], c0[r], draws[at], 0.5 if m == "b" else 1.0)
        assert np.array_equal(got[at], want.numpy()), m
        torch.testing.assert_close(pool.state.h[r], h, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(pool.state.c[r], c, rtol=1e-5, atol=1e-6)


def joint_setup(env, fixed_shapes=False, compile_mode=None):
    learner = small_policy(9)
    actor = PolicyActor(
        learner, TCGSampler(), env.num_agents, torch.Generator().manual_seed(4), compile_mode=compile_mode
    )
    pool = FrozenPool(RowFormat.of(env), max_batch=16, device=CPU, seed=6, capacity=3, fixed_shapes=fixed_shapes)
    members = {"a": small_policy(1), "b": small_policy(2)}
    for m, policy in members.items():
        pool.add(m, policy, TCGSampler())
    return actor, pool, members


def test_the_learner_step_decides_for_the_pool_rows_in_the_same_call():
    """decide(companion=pool): the learner's own outputs are those of a plain decide, and the pool's
    rows get exactly what each member alone decides (draws: one per row of the batch)."""
    env = TCGEnv(num_games=16, seed=2)
    obs, _ = env.reset()
    rows = np.flatnonzero(env.masks)
    theirs = rows[[1, 2, 6, 9, 10, 13]]
    who = {int(r): "ab"[k % 2] for k, r in enumerate(theirs)}
    actor, pool, members = joint_setup(env)
    plain, _, _ = joint_setup(env)
    routed(pool, who)
    pool.plan(rows, theirs)
    o, r = torch.from_numpy(obs[rows]), torch.from_numpy(rows)
    d = actor.decide(o, r, companion=pool)
    want = plain.decide(o, r)
    for field in ("actions", "logprob", "value", "entropy"):
        assert torch.equal(getattr(d, field), getattr(want, field)), field
    assert torch.equal(actor.state.h, plain.state.h)
    mine = ~np.isin(rows, theirs)
    assert torch.equal(d.played[mine], want.actions[mine])
    draws = torch.rand(len(rows), 4, UNIFORM_WIDTH, generator=torch.Generator().manual_seed(6))
    zeros = torch.zeros(len(theirs), 8)
    for m, policy in members.items():
        rs = np.array([x for x in theirs if who[int(x)] == m])
        at = np.searchsorted(rows, rs)
        acts, h, _ = member_alone(policy, obs[rs], zeros[: len(rs)], zeros[: len(rs)], draws[at])
        assert torch.equal(d.played[at], acts), m
        torch.testing.assert_close(pool.state.h[rs], h, rtol=1e-5, atol=1e-6)
    assert not pool.state.h_all[pool.state.sink + 1 :].numel() and not pool.state.h[rows[mine]].any()


@pytest.mark.slow  # compiles the joint step with inductor on the CPU: about a minute
def test_the_compiled_joint_step_equals_eager_and_compiles_once_after_warm_up():
    """The GPU path's code on the CPU: the same JointStep under torch.compile (fixed shapes)
    decides like the eager one, and steps with other numbers of pool rows (within the bucket)
    compile nothing new."""
    env = TCGEnv(num_games=32, seed=4)
    obs, _ = env.reset()
    compiled, pool_c, _ = joint_setup(env, fixed_shapes=True, compile_mode="default")
    eager, pool_e, _ = joint_setup(env, fixed_shapes=True)
    rng = np.random.default_rng(0)
    graphs = []
    for step in range(6):
        rows = np.flatnonzero(env.masks)
        theirs = rows[:16] if step == 0 else rows[rng.random(len(rows)) < 0.4][:16]
        who = {int(r): "a" if step == 0 else "ab"[int(rng.integers(2))] for r in theirs}  # step 0: bucket 16
        outs = []
        for actor, pool in ((compiled, pool_c), (eager, pool_e)):
            routed(pool, who)
            pool.plan(rows, theirs)
            outs.append(actor.decide(torch.from_numpy(obs[rows]), torch.from_numpy(rows), companion=pool))
        graphs.append(counters["stats"]["unique_graphs"])
        assert torch.equal(outs[0].played, outs[1].played)
        torch.testing.assert_close(pool_c.state.h, pool_e.state.h, rtol=1e-4, atol=1e-5)
        actions = np.zeros((env.num_agents, 4), dtype=np.int32)
        actions[rows] = outs[1].played.numpy()
        obs, *_ = env.step(actions)
    assert pool_c.bucket == 16 and graphs[1:] == graphs[:1] * 5
