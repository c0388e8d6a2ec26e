"""TCGPolicy: config round trip, shapes, NONE row, the recurrence (recurrent.lstm_cell == nn.LSTMCell,
ppo.unroll == stepping with the stored states restored at boundaries), gradients of the PPO loss, and
torch.compile."""

import pytest
import torch
from torch import nn

from tcgleague.engine import LAYOUT
from tcgleague.env import TCGEnv
from tcgleague.layout import effects_from_obs, legal_from_obs
from tcgleague.policy import PolicyConfig, TCGSampler, build_policy, gather_rows
from tcgleague.policy.tcg_sampler import draw_uniforms
from tcgleague.ppo import PPOLoss, unroll
from tcgleague.recurrent import lstm_cell


def zero_state(policy, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.zeros(batch, policy.hidden_size), torch.zeros(batch, policy.hidden_size)


def rollout_obs(num_games=8, steps=24, seed=0):
    """Real observations [steps, 2 * num_games, obs_size] from a random policy's legal play."""
    env = TCGEnv(num_games=num_games, seed=seed)
    obs, _ = env.reset()
    policy = build_policy(PolicyConfig(n_cards=env.pool.n_cards, entity_dim=16, hidden_size=16, card_embed_dim=8), seed)
    sampler = TCGSampler()
    generator = torch.Generator().manual_seed(seed)
    all_obs = []
    state = zero_state(policy, env.num_agents)
    with torch.no_grad():
        for _ in range(steps):
            o = torch.from_numpy(obs.copy())
            all_obs.append(o)
            x, ent = policy.encode(o)
            out, state = policy.step(x, state)
            legal, count = legal_from_obs(o)
            actions, _, _ = sampler.sample(policy, out, ent, legal, count, generator=generator)
            obs, *_ = env.step(actions.numpy())
    return torch.stack(all_obs), env


@pytest.fixture(scope="module")
def data():
    return rollout_obs()


def make_policy(env, seed=0, **kw):
    return build_policy(PolicyConfig(n_cards=env.pool.n_cards, **kw), seed)


def test_config_round_trip_and_unknown_keys():
    cfg = PolicyConfig(n_cards=74, card_embed_dim=16, entity_dim=48, hidden_size=96, entity_attention_layers=1)
    d = cfg.to_dict()
    assert d == {
        "n_cards": 74,
        "card_embed_dim": 16,
        "entity_dim": 48,
        "hidden_size": 96,
        "n_decks": cfg.n_decks,
        "entity_attention_layers": 1,
        "legal_scorer_dim": 0,
        "legal_effect_dim": 0,
    }
    assert PolicyConfig.from_dict(d) == cfg
    for key in ("entity_attention_layers", "legal_scorer_dim", "legal_effect_dim"):  # checkpoints from before each key
        old = {k: v for k, v in d.items() if k != key}
        assert getattr(PolicyConfig.from_dict(old), key) == 0
        with pytest.raises(ValueError, match=f"{key} must be an int >= 0"):
            PolicyConfig(n_cards=74, **{key: -1})
    with pytest.raises(ValueError, match="unknown keys.*hiden_size"):
        PolicyConfig.from_dict({**d, "hiden_size": 64})
    with pytest.raises(ValueError, match="hidden_size"):
        PolicyConfig(n_cards=74, hidden_size=0)
    with pytest.raises(TypeError):
        PolicyConfig.from_dict({"entity_dim": 8})  # n_cards is required


def test_build_policy_is_seeded_and_leaves_the_global_rng_alone(data):
    _, env = data
    torch.manual_seed(123)
    before = torch.get_rng_state()
    a, b, c = make_policy(env, seed=4), make_policy(env, seed=4), make_policy(env, seed=5)
    assert torch.equal(torch.get_rng_state(), before), "building a policy moved the global torch RNG"
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert not torch.equal(a.lstm.weight_ih, c.lstm.weight_ih)


def test_encode_shapes_none_row_and_heads(data):
    obs, env = data
    policy = make_policy(env)
    o = obs[3]
    x, ent = policy.encode(o)
    B, N = o.shape[0], LAYOUT["n_entities"] + 1
    assert x.shape == (B, policy.hidden_size) and ent.shape == (B, N, policy.entity_dim)
    assert torch.isfinite(x).all() and torch.isfinite(ent).all()
    # the row at none_entity is the learned NONE row: the same for every observation
    none = ent[:, LAYOUT["none_entity"]]
    assert torch.equal(none, none[:1].expand(B, -1))
    assert torch.equal(none[0], policy.encode(torch.zeros(1, o.shape[-1]))[1][0, LAYOUT["none_entity"]])
    # leading dims are preserved
    x2, ent2 = policy.encode(obs[:2])
    assert x2.shape == (2, B, policy.hidden_size) and ent2.shape == (2, B, N, policy.entity_dim)
    torch.testing.assert_close(x2[1], policy.encode(obs[1])[0], rtol=1e-5, atol=1e-5)

    out, (h, c) = policy.step(x, zero_state(policy, B))
    assert torch.equal(out, h) and h.shape == c.shape == (B, policy.hidden_size)
    t = torch.randint(0, LAYOUT["n_action_types"], (B,))
    a = torch.randint(0, LAYOUT["n_a"], (B,))
    b = torch.randint(0, LAYOUT["n_b"], (B,))
    assert policy.value(out).shape == (B,)
    assert policy.type_logits(out).shape == (B, LAYOUT["n_action_types"])
    assert policy.a_logits(out, ent, t).shape == (B, LAYOUT["n_a"])
    lb = policy.b_logits(out, ent, t, a)
    assert lb.shape == (B, LAYOUT["n_b"])
    assert policy.c_logits(out, ent, t, a, b).shape == (B, LAYOUT["n_c"])
    # b is conditioned on ent[a]; gather_rows is ent[a]
    assert not torch.allclose(lb, policy.b_logits(out, ent, t, (a + 1) % LAYOUT["n_a"]))
    torch.testing.assert_close(gather_rows(ent, a), ent[torch.arange(B), a])


def test_observation_features_matter(data):
    """Card ids, numeric features and globals all reach x (changing one changes the encoding)."""
    obs, env = data
    policy = make_policy(env)
    o = obs[5][:4].clone()
    ef, off, w = LAYOUT["entity_features"], LAYOUT["entity_offset"], LAYOUT["entity_width"]
    leader = LAYOUT["entity_groups"]["my_leader"]
    x0, _ = policy.encode(o)
    for col in (
        off + leader * w + ef["health"],
        off + leader * w + ef["card"],
        LAYOUT["global_offset"] + LAYOUT["global_features"]["my_energy"],
    ):
        o2 = o.clone()
        o2[:, col] += 1
        assert not torch.allclose(policy.encode(o2)[0], x0), col


def test_entity_attention_makes_entities_see_each_other_but_not_absent_ones(data):
    """Without attention an entity's embedding depends on its own features only; with it, a
    present entity changes the others', and an absent one's features change nothing."""
    obs, env = data
    o = obs[5][:4].clone()
    ef, off, w = LAYOUT["entity_features"], LAYOUT["entity_offset"], LAYOUT["entity_width"]
    present = o[:, off + ef["present"] :: w][:, : LAYOUT["n_entities"]] > 0.5
    both = present.all(0)
    alive, gone = int(both.nonzero()[0]), int((~present).all(0).nonzero()[0])
    other = int(both.nonzero()[1])
    pooled_only, attending = make_policy(env), make_policy(env, entity_attention_layers=1)
    for policy, sees_others in ((pooled_only, False), (attending, True)):
        _, ent = policy.encode(o)
        changed = o.clone()
        changed[:, off + other * w + ef["health"]] += 3
        moved = not torch.allclose(policy.encode(changed)[1][:, alive], ent[:, alive])
        assert moved == sees_others
        hidden = o.clone()
        hidden[:, off + gone * w + ef["health"]] += 3  # an absent entity's stale features
        torch.testing.assert_close(policy.encode(hidden)[1][:, alive], ent[:, alive])
        assert torch.isfinite(ent).all()


# ---- the recurrence ------------------------------------------------------------------------------
def test_lstm_cell_is_bit_identical_to_nn_lstmcell_forward_and_backward():
    g = torch.Generator().manual_seed(0)
    cell = nn.LSTMCell(12, 20)
    with torch.no_grad():
        for p in cell.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    x, h, c = (torch.randn(9, n, generator=g, requires_grad=True) for n in (12, 20, 20))
    wh, wc = torch.randn(9, 20, generator=g), torch.randn(9, 20, generator=g)
    inputs = [x, h, c, *cell.parameters()]
    results = []
    for fn in (lambda: cell(x, (h, c)), lambda: lstm_cell(cell, x, h, c)):
        h2, c2 = fn()
        grads = torch.autograd.grad((h2 * wh).sum() + (c2 * wc).sum(), inputs)
        results.append((h2.detach(), c2.detach(), grads))
    (h_ref, c_ref, g_ref), (h_got, c_got, g_got) = results
    assert torch.equal(h_got, h_ref) and torch.equal(c_got, c_ref)
    assert len(g_got) == len(g_ref) == 7
    for name, a, b in zip(("x", "h", "c", "weight_ih", "weight_hh", "bias_ih", "bias_hh"), g_got, g_ref):
        assert torch.equal(a, b), name
        assert a.abs().sum() > 0, name


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
    with torch.no_grad():
        out, ent = unroll(policy, obs, boundary, state_h, state_c)
        flat = obs.reshape(M * T, -1)
        legal, count = legal_from_obs(flat)
        assert (count > 0).sum() > M * T // 2
        actions, logprob, _ = sampler.sample(
            policy,
            out,
            ent,
            legal,
            count,
            params=params,
            generator=torch.Generator().manual_seed(0),
            effects=effects_from_obs(flat),
        )
        value = policy.value(out)
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
        params,
        torch.tensor([0.2, 0.5, 0.2, 0.01]),
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


@pytest.mark.slow  # inductor C++ compile: ~10 s warm cache, 20-50 s cold on a loaded 2-core box
def test_torch_compile_matches_eager(data):
    obs, env = data
    policy = make_policy(env, card_embed_dim=8, entity_dim=16, hidden_size=16, entity_attention_layers=1).eval()
    o = obs[4][:8].clone()
    B = o.shape[0]
    t = torch.tensor([0, 1, 2, 3, 4, 5, 6, 7])
    a = torch.arange(B) * 3 % LAYOUT["n_a"]
    b = torch.arange(B) * 5 % LAYOUT["n_b"]

    def fn(o, h, c, t, a, b):
        x, ent = policy.encode(o)
        out, (h, c) = policy.step(x, (h, c))
        return (
            policy.value(out),
            policy.type_logits(out),
            policy.a_logits(out, ent, t),
            policy.b_logits(out, ent, t, a),
            policy.c_logits(out, ent, t, a, b),
            h,
            c,
        )

    state = (torch.randn(B, 16), torch.randn(B, 16))
    compiled = torch.compile(fn, mode="default", fullgraph=True)  # fullgraph: no graph breaks / host syncs
    with torch.no_grad():
        got = compiled(o, *state, t, a, b)
        want = fn(o, *state, t, a, b)
    for g_, w_ in zip(got, want):
        torch.testing.assert_close(g_, w_, rtol=1e-4, atol=1e-5)


@pytest.mark.slow  # inductor C++ compile, as above
def test_torch_compile_matches_eager_legal_list(data):
    """The legal-list scorer (reading what each action does) and its one-stage sampling compile
    as one graph and agree with eager."""
    obs, env = data
    policy = make_policy(
        env, card_embed_dim=8, entity_dim=16, hidden_size=16, legal_scorer_dim=8, legal_effect_dim=8
    ).eval()
    sampler = TCGSampler(1.0, 1.0, 0.1)
    o = obs[4][:8].clone()
    uniforms = draw_uniforms(len(o), torch.Generator().manual_seed(0))

    def fn(o, h, c, uniforms):
        x, ent = policy.encode(o)
        out, _ = policy.step(x, (h, c))
        legal, count, effects = *legal_from_obs(o), effects_from_obs(o)
        actions, logprob, entropy = sampler.sample(policy, out, ent, legal, count, uniforms=uniforms, effects=effects)
        return actions, logprob, entropy, policy.legal_logits(out, ent, legal, effects)

    state = (torch.randn(len(o), 16), torch.randn(len(o), 16))
    compiled = torch.compile(fn, mode="default", fullgraph=True)
    with torch.no_grad():
        got, want = compiled(o, *state, uniforms), fn(o, *state, uniforms)
    assert torch.equal(got[0], want[0])
    for g_, w_ in zip(got[1:], want[1:]):
        torch.testing.assert_close(g_, w_, rtol=1e-4, atol=1e-5)
