"""TCGSampler: legality, temperature, smoothing, logprob/entropy consistency, padding, parameters."""

import math

import pytest
import torch

from tcgleague.games.emberfront.engine import LAYOUT
from tcgleague.games.emberfront.env import TCGEnv
from tcgleague.games.emberfront.layout import effects_from_obs, features, legal_from_obs
from tcgleague.games.emberfront.policy import PolicyConfig, build_policy
from tcgleague.games.emberfront.sampler import UNIFORM_WIDTH, TCGSampler

NT, NA, NB, NC = LAYOUT["n_action_types"], LAYOUT["n_a"], LAYOUT["n_b"], LAYOUT["n_c"]
L = LAYOUT["max_legal"]


class TablePolicy:
    """Stand-in policy whose stage logits are fixed tables: type [NT], a[type] [NT, NA],
    b[type, a] [NT, NA, NB], c[b] [NB, NC]. `out` is ignored except for its batch shape."""

    n_action_types, n_a, n_b, n_c = NT, NA, NB, NC

    def __init__(self, scale=3.0, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.t = torch.randn(NT, generator=g) * scale
        self.a = torch.randn(NT, NA, generator=g) * scale
        self.b = torch.randn(NT, NA, NB, generator=g) * scale
        self.c = torch.randn(NB, NC, generator=g) * scale

    def type_logits(self, out):
        return self.t.expand(*out.shape[:-1], NT)

    def a_logits(self, out, ent, t):
        return self.a[t]

    def b_logits(self, out, ent, t, a):
        return self.b[t, a]

    def c_logits(self, out, ent, t, a, b):
        return self.c[b]


def dummy(B):
    return torch.zeros(B, 1), torch.zeros(B, NA, 1)


def random_legal(B, seed, max_count=L):
    """Synthetic legal lists with random counts (some 0), duplicate prefixes and junk past count."""
    g = torch.Generator().manual_seed(seed)
    legal = torch.stack(
        [
            torch.randint(0, NT, (B, L), generator=g) % 3 + torch.randint(0, 2, (B, 1), generator=g) * 4,
            torch.randint(0, 4, (B, L), generator=g) * 6,
            torch.randint(0, NB, (B, L), generator=g) % 5,
            torch.randint(0, NC, (B, L), generator=g),
        ],
        -1,
    )
    count = torch.randint(0, max_count + 1, (B,), generator=g)
    count[::7] = 0
    count[1::7] = 1
    return legal, count


def assert_legal(actions, legal, count):
    match = (legal == actions[:, None, :]).all(-1) & (torch.arange(legal.shape[1])[None] < count[:, None])
    ok = match.any(-1) | (count == 0)
    assert ok.all(), f"illegal actions at rows {torch.nonzero(~ok).flatten().tolist()[:10]}"
    assert (actions[count == 0] == 0).all()


SCORED_HEADS = {  # the last layer of each logit, by how the policy scores an action
    "staged": ("type_head", "qa", "qb", "c_head"),
    "legal_list": ("ls_type", "ls_qa", "ls_qb", "ls_c", "ls_gate"),
    "legal_effects": ("ls_type", "ls_qa", "ls_qb", "ls_c", "ls_gate", "ls_qfx"),
}


def real_decisions(scoring: str):
    """Real observations from random legal play, a random policy (autoregressive stages, or one
    stage over the legal list, with or without what each action does), and its (out, ent)."""
    env = TCGEnv(num_games=32, seed=3)
    obs, _ = env.reset()
    scorer_dim = 0 if scoring == "staged" else 16
    effect_dim = 8 if scoring == "legal_effects" else 0
    config = PolicyConfig(
        n_cards=env.pool.n_cards,
        entity_dim=32,
        hidden_size=64,
        legal_scorer_dim=scorer_dim,
        legal_effect_dim=effect_dim,
    )
    policy = build_policy(config, seed=0)
    # sharper random logits so the heads have strong (arbitrary) preferences, illegal values included
    with torch.no_grad():
        for head in SCORED_HEADS[scoring]:
            getattr(policy, head).weight.mul_(300.0)
    sampler = TCGSampler()
    collected = []
    state = (torch.zeros(env.num_agents, policy.hidden_size), torch.zeros(env.num_agents, policy.hidden_size))
    with torch.no_grad():
        for step in range(24):
            o = features(torch.from_numpy(obs.copy()))
            x, ent = policy.encode(o)
            out, state = policy.step(x, state)
            legal, count = legal_from_obs(o)
            mask = torch.from_numpy(env.masks.copy())
            count = torch.where(mask, count, torch.zeros_like(count))  # inactive rows are padding
            effects = effects_from_obs(o)
            if step % 3 == 0:
                collected.append((out, ent, legal, count, effects))
            actions, _, _ = sampler.sample(policy, out, ent, legal, count, effects=effects)
            assert_legal(actions, legal, count)
            obs, *_ = env.step(actions.numpy())
    out, ent, legal, count, effects = (torch.cat(x) for x in zip(*collected))
    return policy, out, ent, legal, count, effects


@pytest.fixture(scope="module", params=sorted(SCORED_HEADS))
def real(request):
    return real_decisions(request.param)


# --------------------------------------------------------------------------- legality
def test_real_observations_never_illegal(real):
    policy, out, ent, legal, count, effects = real
    assert (count > 0).sum() > 100 and (count > 10).any()
    sampler = TCGSampler()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for temps in [(1.0, 1.0, 0.0), (0.1, 5.0, 0.3), (3.0, 0.05, 0.9)]:
            sampler.set_sampling_params(*temps)
            for _ in range(4):
                actions, lp, ent_ = sampler.sample(policy, out, ent, legal, count, effects=effects, generator=g)
                assert_legal(actions, legal, count)
                assert torch.isfinite(lp).all() and torch.isfinite(ent_).all()
                assert (lp[count > 0] < 1e-5).all()
            actions, _, _ = sampler.sample(policy, out, ent, legal, count, effects=effects, argmax=True)
            assert_legal(actions, legal, count)


def test_synthetic_never_illegal():
    policy = TablePolicy(scale=10.0)
    legal, count = random_legal(512, seed=2)
    out, ent = dummy(512)
    sampler = TCGSampler(1.0, 1.0, 0.2)
    g = torch.Generator().manual_seed(0)
    for _ in range(8):
        actions, lp, e = sampler.sample(policy, out, ent, legal, count, generator=g)
        assert_legal(actions, legal, count)
    actions, _, _ = sampler.greedy(policy, out, ent, legal, count)
    assert_legal(actions, legal, count)


# --------------------------------------------------------------------------- temperature / smoothing
def single_stage_rows(stage, values, n_rows=1):
    """A legal list where only `stage` varies over `values`; the other components are fixed."""
    fixed = [2, 5, 9, 3]
    rows = []
    for v in values:
        t = list(fixed)
        t[stage] = v
        rows.append(t)
    legal = torch.zeros(n_rows, L, 4, dtype=torch.long)
    legal[:, : len(rows)] = torch.tensor(rows)
    legal[:, len(rows) :] = torch.tensor([1, 1, 1, 1])  # junk past count: must be ignored
    return legal, torch.full((n_rows,), len(rows))


def stage_logits(policy, stage):
    t, a, b = 2, 5, 9
    return [policy.t, policy.a[t], policy.b[t, a], policy.c[b]][stage]


def stage_logp(sampler, policy, stage, values, params):
    """log p of each legal value at `stage`, as the sampler computes it (other stages have one value)."""
    legal, count = single_stage_rows(stage, values, n_rows=len(values))
    actions = legal[torch.arange(len(values)), torch.arange(len(values))]
    out, ent = dummy(len(values))
    lp, e = sampler.log_prob_entropy(policy, out, ent, legal, count, actions, params)
    return lp, e


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
@pytest.mark.parametrize("temp", [0.5, 1.0, 2.5])
def test_temperature_matches_hand_softmax(stage, temp):
    policy = TablePolicy()
    sampler = TCGSampler()
    values = [0, 1, 3, 6] if stage != 0 else [0, 2, 3, 7]
    params = torch.tensor([temp if stage == 0 else 1.0, 1.0 if stage == 0 else temp, 0.0])
    lp, e = stage_logp(sampler, policy, stage, values, params)
    z = stage_logits(policy, stage)[values] / temp
    want = torch.log_softmax(z, 0)
    torch.testing.assert_close(lp, want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(e, torch.full_like(e, float(-(want.exp() * want).sum())), rtol=1e-5, atol=1e-5)
    # the other stage's temperature does not affect this stage
    other = params.clone()
    other[1 if stage == 0 else 0] = 7.0
    torch.testing.assert_close(stage_logp(sampler, policy, stage, values, other)[0], want, rtol=1e-5, atol=1e-5)


def test_low_temperature_nearly_argmax():
    policy = TablePolicy(scale=1.0)
    legal, count = random_legal(256, seed=5)
    count = count.clamp(min=2)
    out, ent = dummy(256)
    sampler = TCGSampler(0.05, 0.05, 0.0)
    greedy, _, _ = sampler.sample(policy, out, ent, legal, count, argmax=True)
    g = torch.Generator().manual_seed(3)
    agree = (
        torch.stack(
            [(sampler.sample(policy, out, ent, legal, count, generator=g)[0] == greedy).all(-1) for _ in range(10)]
        )
        .float()
        .mean()
    )
    assert agree > 0.95
    hot = TCGSampler(5.0, 5.0, 0.0)
    agree_hot = (
        torch.stack([(hot.sample(policy, out, ent, legal, count, generator=g)[0] == greedy).all(-1) for _ in range(10)])
        .float()
        .mean()
    )
    assert agree_hot < agree - 0.2


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_smoothing_mixes_toward_uniform_at_parameter_stages(stage):
    policy = TablePolicy(scale=6.0)
    sampler = TCGSampler()
    values = [0, 2, 3, 6, 7]
    eps, temp = 0.3, 1.5
    lp, _ = stage_logp(sampler, policy, stage, values, torch.tensor([1.0, temp, eps]))
    p = torch.softmax(stage_logits(policy, stage)[values] / temp, 0)
    want = (1 - eps) * p + eps / len(values)
    torch.testing.assert_close(lp.exp(), want, rtol=1e-5, atol=1e-6)
    assert lp.exp().min() >= eps / len(values) - 1e-6


def test_smoothing_not_applied_at_type_stage():
    policy = TablePolicy(scale=6.0)
    sampler = TCGSampler()
    values = [0, 2, 3, 7]
    lp0, e0 = stage_logp(sampler, policy, 0, values, torch.tensor([1.3, 1.0, 0.0]))
    lp1, e1 = stage_logp(sampler, policy, 0, values, torch.tensor([1.3, 1.0, 0.6]))
    torch.testing.assert_close(lp0, lp1)
    torch.testing.assert_close(e0, e1)
    torch.testing.assert_close(lp0, torch.log_softmax(policy.t[values] / 1.3, 0))


def test_empirical_frequencies_match_logprob():
    """Sampling really draws from the stated distribution (temperature + smoothing), not just reports it."""
    policy = TablePolicy(scale=1.5)
    legal, count = random_legal(64, seed=11)
    row = int(torch.nonzero(count > 20)[0])
    n = 20000
    legal, count = legal[row : row + 1].expand(n, L, 4), count[row : row + 1].expand(n)
    out, ent = dummy(n)
    sampler = TCGSampler(1.3, 0.7, 0.25)
    actions, lp, _ = sampler.sample(policy, out, ent, legal, count, generator=torch.Generator().manual_seed(0))
    uniq, inv, freq = torch.unique(actions, dim=0, return_inverse=True, return_counts=True)
    prob = torch.zeros(len(uniq)).scatter_(0, inv, lp.exp())
    # every distinct legal tuple's probability, summed, is 1 (over the tuples seen plus unseen mass)
    assert prob.sum() <= 1.0 + 1e-4
    big = prob > 0.02
    assert big.any()
    emp = freq.float() / n
    sd = (prob * (1 - prob) / n).sqrt()
    assert ((emp[big] - prob[big]).abs() < 5 * sd[big] + 1e-3).all()


def test_probabilities_sum_to_one_over_legal_tuples():
    policy = TablePolicy(scale=2.0)
    legal, count = random_legal(32, seed=4)
    sampler = TCGSampler(0.8, 1.7, 0.4)
    for r in range(32):
        k = int(count[r])
        if k == 0:
            continue
        tuples = torch.unique(legal[r, :k], dim=0)
        m = len(tuples)
        out, ent = dummy(m)
        lp, _ = sampler.log_prob_entropy(
            policy,
            out,
            ent,
            legal[r : r + 1].expand(m, L, 4),
            count[r : r + 1].expand(m),
            tuples,
            sampler.params_tensor(),
        )
        assert abs(float(lp.exp().sum()) - 1.0) < 1e-4


# --------------------------------------------------------------------------- consistency with PPO
def test_sample_logprob_equals_log_prob_entropy_real(real):
    policy, out, ent, legal, count, effects = real
    B = out.shape[0]
    sampler = TCGSampler(1.2, 0.8, 0.1)
    g = torch.Generator().manual_seed(5)
    params = torch.stack(
        [torch.rand(B, generator=g) + 0.2, torch.rand(B, generator=g) + 0.2, torch.rand(B, generator=g) * 0.5], -1
    )  # per-row params, as stored per step
    with torch.no_grad():
        for p in (None, sampler.params_tensor(), params):
            actions, lp, e = sampler.sample(policy, out, ent, legal, count, effects=effects, params=p, generator=g)
            lp2, e2 = sampler.log_prob_entropy(
                policy, out, ent, legal, count, actions, sampler.params_tensor() if p is None else p, effects=effects
            )
            assert torch.equal(lp, lp2) and torch.equal(e, e2)
            assert torch.equal(torch.exp(lp2 - lp), torch.ones_like(lp))  # PPO ratio exactly 1
    # leading dims [B, T] work too
    a2, lp2d, _ = sampler.sample(
        policy,
        out[:40].reshape(4, 10, -1),
        ent[:40].reshape(4, 10, *ent.shape[1:]),
        legal[:40].reshape(4, 10, L, 4),
        count[:40].reshape(4, 10),
        effects=effects[:40].reshape(4, 10, *effects.shape[1:]),
    )
    assert a2.shape == (4, 10, 4) and lp2d.shape == (4, 10)


def test_log_prob_entropy_grad_finite_with_padding(real):
    policy, out, ent, legal, count, effects = real
    assert (count == 0).any()
    out = out.detach().requires_grad_(True)
    ent = ent.detach().requires_grad_(True)
    sampler = TCGSampler()
    for eps in (0.0, 0.2):
        params = torch.tensor([1.0, 1.0, eps])
        with torch.no_grad():
            actions, _, _ = sampler.sample(policy, out, ent, legal, count, effects=effects, params=params)
        lp, e = sampler.log_prob_entropy(policy, out, ent, legal, count, actions, params, effects=effects)
        (lp.sum() + e.sum()).backward()
        assert torch.isfinite(out.grad).all() and torch.isfinite(ent.grad).all()
        assert all(torch.isfinite(p.grad).all() for p in policy.parameters() if p.grad is not None)
        out.grad = ent.grad = None
        policy.zero_grad()


def test_padded_rows_zero_no_nan():
    policy = TablePolicy()
    legal, count = random_legal(16, seed=9)
    count[:] = 0
    count[3] = 5
    out, ent = dummy(16)
    for argmax in (False, True):
        actions, lp, e = TCGSampler(1.0, 1.0, 0.5).sample(policy, out, ent, legal, count, argmax=argmax)
        pad = count == 0
        assert (actions[pad] == 0).all() and (lp[pad] == 0).all() and (e[pad] == 0).all()
        assert torch.isfinite(lp).all() and torch.isfinite(e).all()
        assert lp[3] <= 0 and e[3] >= 0
    lp, e = TCGSampler().log_prob_entropy(policy, out, ent, legal, count, torch.zeros(16, 4, dtype=torch.long), None)
    assert (lp[count == 0] == 0).all() and (e[count == 0] == 0).all() and torch.isfinite(lp).all()


def test_argmax_picks_most_likely_value_per_stage():
    policy = TablePolicy()
    legal, count = random_legal(128, seed=6)
    out, ent = dummy(128)
    sampler = TCGSampler(0.7, 1.9, 0.3)
    actions, _, _ = sampler.greedy(policy, out, ent, legal, count)
    for r in torch.nonzero(count > 0).flatten().tolist()[:40]:
        cons = torch.arange(L) < count[r]
        for k in range(4):
            vals = legal[r, cons, k].unique()
            logits = [
                policy.t,
                policy.a[actions[r, 0]],
                policy.b[actions[r, 0], actions[r, 1]],
                policy.c[actions[r, 2]],
            ][k]
            assert actions[r, k] == vals[logits[vals].argmax()]
            cons = cons & (legal[r, :, k] == actions[r, k])


def test_generator_reproducible():
    policy = TablePolicy()
    legal, count = random_legal(64, seed=7)
    out, ent = dummy(64)
    s = TCGSampler()
    a1, lp1, _ = s.sample(policy, out, ent, legal, count, generator=torch.Generator().manual_seed(42))
    a2, lp2, _ = s.sample(policy, out, ent, legal, count, generator=torch.Generator().manual_seed(42))
    assert torch.equal(a1, a2) and torch.equal(lp1, lp2)


# --------------------------------------------------------------------------- parameters
def test_set_sampling_params_validation():
    s = TCGSampler()
    assert s.get_sampling_params() == {"primary_temperature": 1.0, "subaction_temperature": 1.0, "smoothing_eps": 0.0}
    s.set_sampling_params(primary_temperature=0.5)
    s.set_sampling_params(smoothing_eps=0.25)
    assert s.get_sampling_params() == {"primary_temperature": 0.5, "subaction_temperature": 1.0, "smoothing_eps": 0.25}
    torch.testing.assert_close(s.params_tensor(), torch.tensor([0.5, 1.0, 0.25]))
    bad = [
        ("primary_temperature", 0.0),
        ("primary_temperature", -1.0),
        ("primary_temperature", math.nan),
        ("subaction_temperature", math.inf),
        ("subaction_temperature", "hot"),
        ("subaction_temperature", 0),
        ("smoothing_eps", 1.0),
        ("smoothing_eps", -0.01),
        ("smoothing_eps", math.nan),
        ("smoothing_eps", "0.1x"),
    ]
    for name, value in bad:
        with pytest.raises(ValueError, match=name):
            s.set_sampling_params(**{name: value})
    # a rejected call changes nothing, even if another argument was valid
    with pytest.raises(ValueError, match="smoothing_eps"):
        s.set_sampling_params(primary_temperature=3.0, smoothing_eps=2.0)
    assert s.get_sampling_params() == {"primary_temperature": 0.5, "subaction_temperature": 1.0, "smoothing_eps": 0.25}
    with pytest.raises(ValueError, match="primary_temperature"):
        TCGSampler(primary_temperature=-2)


def test_from_params_sets_known_keys_and_ignores_the_rest():
    params = {"primary_temperature": 0.5, "smoothing_eps": 0.125, "global_step": 7, "sampler/smoothing_eps": 0.9}
    s = TCGSampler.from_params(params)
    assert s.get_sampling_params() == {"primary_temperature": 0.5, "subaction_temperature": 1.0, "smoothing_eps": 0.125}
    assert TCGSampler.from_params(None).get_sampling_params() == TCGSampler().get_sampling_params()
    assert TCGSampler.from_params(s.get_sampling_params()).get_sampling_params() == s.get_sampling_params()
    with pytest.raises(ValueError, match="subaction_temperature"):
        TCGSampler.from_params({"subaction_temperature": 0.0})


def test_params_tensor_is_a_copy_and_used_by_default():
    policy = TablePolicy()
    legal, count = single_stage_rows(0, [0, 2, 3, 7], n_rows=4)
    actions = legal[torch.arange(4), torch.arange(4)]
    out, ent = dummy(4)
    s = TCGSampler()
    p = s.params_tensor()
    s.set_sampling_params(primary_temperature=2.0)
    assert float(p[0]) == 1.0  # stored copies do not change
    lp_default, _ = s.log_prob_entropy(policy, out, ent, legal, count, actions, None)
    lp_old, _ = s.log_prob_entropy(policy, out, ent, legal, count, actions, p)
    torch.testing.assert_close(lp_default, torch.log_softmax(policy.t[[0, 2, 3, 7]] / 2.0, 0))
    torch.testing.assert_close(lp_old, torch.log_softmax(policy.t[[0, 2, 3, 7]], 0))


# --------------------------------------------------------------------------- compile
def test_sampler_traces_as_one_graph_and_params_do_not_recompile(real):
    """fullgraph tracing (no host syncs or graph breaks); changing the sampling parameters,
    passed explicitly or held by the sampler, never retraces. backend="eager" keeps this fast;
    test_policy checks inductor numerics."""
    policy, out, ent, legal, count, effects = real
    out, ent, legal, count, effects = out[:32], ent[:32], legal[:32], count[:32], effects[:32]
    sampler = TCGSampler()
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def rollout(out, ent, legal, count, params):
        return sampler.sample(policy, out, ent, legal, count, effects=effects, params=params)

    def ppo(out, ent, legal, count, actions, params):
        return sampler.log_prob_entropy(policy, out, ent, legal, count, actions, params, effects=effects)

    def default_params(out, ent, legal, count):
        return sampler.sample(policy, out, ent, legal, count, effects=effects, argmax=True)

    torch._dynamo.reset()
    c_roll = torch.compile(rollout, backend=backend, fullgraph=True)
    c_ppo = torch.compile(ppo, backend=backend, fullgraph=True)
    c_default = torch.compile(default_params, backend=backend, fullgraph=True)
    with torch.no_grad():
        actions, _, _ = c_roll(out, ent, legal, count, sampler.params_tensor())
        assert_legal(actions, legal, count)
        c_ppo(out, ent, legal, count, actions, sampler.params_tensor())
        g0, want0 = c_default(out, ent, legal, count), sampler.greedy(policy, out, ent, legal, count, effects=effects)
        torch.testing.assert_close(g0[0], want0[0])
        n = len(graphs)
        assert n == 3
        sampler.set_sampling_params(0.3, 2.0, 0.4)
        actions, lp, _ = c_roll(out, ent, legal, count, sampler.params_tensor())
        lp2, _ = c_ppo(out, ent, legal, count, actions, sampler.params_tensor())
        torch.testing.assert_close(lp, lp2)
        want = sampler.log_prob_entropy(
            policy, out, ent, legal, count, actions, sampler.params_tensor(), effects=effects
        )[0]
        torch.testing.assert_close(lp, want)  # the compiled graph used the new values
        got = c_default(out, ent, legal, count)
        torch.testing.assert_close(got[1], sampler.greedy(policy, out, ent, legal, count, effects=effects)[1])
        assert not torch.allclose(got[1], g0[1])
        assert len(graphs) == n, "changing sampling parameters recompiled"
    torch._dynamo.reset()


# --------------------------------------------------------------------------- one stage over the legal list
@pytest.fixture(scope="module")
def scorer_rows():
    """Real decisions of a legal-list policy, and the rows with more than two distinct legal tuples."""
    policy, out, ent, legal, count, effects = real_decisions("legal_effects")
    rows = [
        r for r in torch.nonzero(count > 1).flatten().tolist() if len(torch.unique(legal[r, : count[r]], dim=0)) > 2
    ]
    assert len(rows) > 20
    return policy, out, ent, legal, count, effects, rows


def tuple_logp(sampler, policy, out, ent, legal, count, effects, r, tuples):
    m = len(tuples)
    with torch.no_grad():
        return sampler.log_prob_entropy(
            policy,
            out[r].expand(m, -1),
            ent[r].expand(m, -1, -1),
            legal[r].expand(m, -1, -1),
            count[r].expand(m),
            tuples,
            effects=effects[r].expand(m, -1, -1),
        )


def test_legal_list_probabilities_sum_to_one_and_match_sampling(scorer_rows):
    policy, out, ent, legal, count, effects, rows = scorer_rows
    sampler = TCGSampler(1.0, 1.0, 0.1)
    for r in rows[:10]:
        tuples = torch.unique(legal[r, : count[r]], dim=0)
        lp, e = tuple_logp(sampler, policy, out, ent, legal, count, effects, r, tuples)
        assert abs(float(lp.exp().sum()) - 1.0) < 1e-4
        assert torch.allclose(e, e[:1].expand_as(e)) and float(e[0]) > 0  # the whole distribution's entropy
    r, n = rows[0], 20000
    with torch.no_grad():
        actions, _, _ = sampler.sample(
            policy,
            out[r].expand(n, -1),
            ent[r].expand(n, -1, -1),
            legal[r].expand(n, -1, -1),
            count[r].expand(n),
            generator=torch.Generator().manual_seed(0),
            effects=effects[r].expand(n, -1, -1),
        )
    tuples = torch.unique(legal[r, : count[r]], dim=0)
    prob = tuple_logp(sampler, policy, out, ent, legal, count, effects, r, tuples)[0].exp()
    freq = torch.stack([(actions == t).all(-1).float().mean() for t in tuples])
    assert ((freq - prob).abs() < 5 * (prob * (1 - prob) / n).sqrt() + 1e-3).all()


def test_legal_list_temperature_smoothing_and_argmax(scorer_rows):
    """primary_temperature sharpens the one stage, smoothing_eps mixes toward uniform over the
    legal tuples, subaction_temperature has nothing to act on; argmax takes the likeliest tuple."""
    policy, out, ent, legal, count, effects, rows = scorer_rows
    r = next(r for r in rows if len(torch.unique(legal[r, : count[r]], dim=0)) == count[r])  # no tuple listed twice
    tuples = torch.unique(legal[r, : count[r]], dim=0)
    base = tuple_logp(TCGSampler(1.0, 1.0, 0.0), policy, out, ent, legal, count, effects, r, tuples)[0]
    assert torch.equal(
        base, tuple_logp(TCGSampler(1.0, 3.0, 0.0), policy, out, ent, legal, count, effects, r, tuples)[0]
    )
    sharp = tuple_logp(TCGSampler(0.5, 1.0, 0.0), policy, out, ent, legal, count, effects, r, tuples)[0]
    torch.testing.assert_close(sharp, torch.log_softmax(2 * base, 0), rtol=0, atol=1e-4)
    mixed = tuple_logp(TCGSampler(1.0, 1.0, 0.5), policy, out, ent, legal, count, effects, r, tuples)[0]
    uniform = torch.stack([(legal[r, : count[r]] == t).all(-1).float().mean() for t in tuples])
    torch.testing.assert_close(mixed.exp(), 0.5 * base.exp() + 0.5 * uniform, rtol=0, atol=1e-5)
    with torch.no_grad():
        best, _, _ = TCGSampler().greedy(
            policy, out[r : r + 1], ent[r : r + 1], legal[r : r + 1], count[r : r + 1], effects=effects[r : r + 1]
        )
    assert torch.equal(best[0], tuples[base.argmax()])


def test_legal_list_takes_one_uniform_per_decision(scorer_rows):
    """A rollout's draws (`uniforms`) decide the action alone: the same draws, the same actions;
    only the first draw of a decision is read."""
    policy, out, ent, legal, count, effects, _ = scorer_rows
    sampler = TCGSampler()
    u = torch.rand(len(out), 4, UNIFORM_WIDTH, generator=torch.Generator().manual_seed(4))
    other = torch.rand(u.shape, generator=torch.Generator().manual_seed(5))
    other[:, 0, 0] = u[:, 0, 0]
    with torch.no_grad():
        first = sampler.sample(policy, out, ent, legal, count, effects=effects, uniforms=u)
        again = sampler.sample(policy, out, ent, legal, count, effects=effects, uniforms=other)
        moved = u.clone()
        moved[:, 0, 0] = (u[:, 0, 0] + 0.5) % 1.0
        shifted = sampler.sample(policy, out, ent, legal, count, effects=effects, uniforms=moved)
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    assert not torch.equal(first[0], shifted[0])
    assert_legal(first[0], legal, count)
