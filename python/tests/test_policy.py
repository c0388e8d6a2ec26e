"""TCGPolicy: config round trip, shapes, NONE row, forward_sequence == step-by-step, torch.compile."""
import pytest
import torch

from tcgleague.engine import LAYOUT
from tcgleague.env import TCGEnv
from tcgleague.policy import PolicyConfig, TCGPolicy, TCGSampler, gather_rows, legal_from_obs


def rollout_obs(num_games=8, steps=24, seed=0):
    """Real observations [steps, 2 * num_games, obs_size], masks and done flags from random legal play."""
    torch.manual_seed(seed)
    env = TCGEnv(num_games=num_games, seed=seed)
    obs, _ = env.reset()
    policy = TCGPolicy(PolicyConfig(n_cards=env.pool.n_cards, entity_dim=16, hidden_size=16, card_embed_dim=8))
    sampler = TCGSampler()
    all_obs, all_masks, all_done = [], [], []
    state = policy.initial_state(env.num_agents)
    with torch.no_grad():
        for _ in range(steps):
            o = torch.from_numpy(obs.copy())
            all_obs.append(o)
            all_masks.append(torch.from_numpy(env.masks.copy()))
            out, ent, _, state = policy(o, state)
            legal, count = legal_from_obs(o)
            actions, _, _ = sampler.sample(policy, out, ent, legal, count)
            obs, _, term, trunc, _ = env.step(actions.numpy())
            all_done.append(torch.from_numpy(term | trunc))
    return torch.stack(all_obs), torch.stack(all_masks), torch.stack(all_done), env


@pytest.fixture(scope="module")
def data():
    return rollout_obs()


def make_policy(env, seed=0, **kw):
    torch.manual_seed(seed)
    return TCGPolicy(PolicyConfig(n_cards=env.pool.n_cards, **kw))


def test_config_round_trip_and_unknown_keys():
    cfg = PolicyConfig(n_cards=74, card_embed_dim=16, entity_dim=48, hidden_size=96)
    d = cfg.to_dict()
    assert d == {"n_cards": 74, "card_embed_dim": 16, "entity_dim": 48, "hidden_size": 96, "n_decks": cfg.n_decks}
    assert PolicyConfig.from_dict(d) == cfg
    with pytest.raises(ValueError, match="unknown keys.*hiden_size"):
        PolicyConfig.from_dict({**d, "hiden_size": 64})
    with pytest.raises(ValueError, match="hidden_size"):
        PolicyConfig(n_cards=74, hidden_size=0)
    with pytest.raises(TypeError):
        PolicyConfig.from_dict({"entity_dim": 8})   # n_cards is required


def test_encode_shapes_none_row_and_heads(data):
    obs, masks, _, env = data
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

    h, c = policy.initial_state(B)
    assert h.shape == (B, policy.hidden_size) and not h.any() and not c.any()
    out, (h, c) = policy.step(x, (h, c))
    assert torch.equal(out, h)
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
    obs, _, _, env = data
    policy = make_policy(env)
    o = obs[5][:4].clone()
    ef, off, w = LAYOUT["entity_features"], LAYOUT["entity_offset"], LAYOUT["entity_width"]
    leader = LAYOUT["entity_groups"]["my_leader"]
    x0, _ = policy.encode(o)
    for col in (off + leader * w + ef["health"], off + leader * w + ef["card"],
                LAYOUT["global_offset"] + LAYOUT["global_features"]["my_energy"]):
        o2 = o.clone()
        o2[:, col] += 1
        assert not torch.allclose(policy.encode(o2)[0], x0), col


def test_forward_sequence_equals_step_by_step_with_resets(data):
    obs, _, done, env = data
    policy = make_policy(env, seed=1)
    obs = obs[:12].transpose(0, 1).contiguous()                 # [B, T, obs]
    B, T = obs.shape[:2]
    starts = torch.zeros(B, T)                                   # t = 0 carries state0 in
    starts[::2, 5] = 1.0                                         # a reset mid-sequence on half the rows
    starts[1::3, 9] = 1.0
    g = torch.Generator().manual_seed(0)
    state0 = (torch.randn(B, policy.hidden_size, generator=g), torch.randn(B, policy.hidden_size, generator=g))
    out_seq, ent_seq, (hs, cs) = policy.forward_sequence(obs, state0, starts)

    h, c = state0
    outs = []
    for t in range(T):
        keep = (1.0 - starts[:, t]).unsqueeze(-1)
        x, ent = policy.encode(obs[:, t])
        out, (h, c) = policy.step(x, (h * keep, c * keep))
        outs.append(out)
        torch.testing.assert_close(ent_seq[:, t], ent, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(out_seq, torch.stack(outs, 1), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(hs, h, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(cs, c, rtol=1e-5, atol=1e-6)
    # the reset really happened: without it the outputs after step 5 differ
    no_reset, _, _ = policy.forward_sequence(obs, state0, torch.zeros(B, T))
    assert torch.allclose(no_reset[:, :5], out_seq[:, :5], atol=1e-6)
    assert not torch.allclose(no_reset[0, 5], out_seq[0, 5], atol=1e-4)
    # a start at t resets: starting from a zero state gives the same as starting from state0
    st = torch.zeros(B, T)
    st[:, 0] = 1.0
    a, _, _ = policy.forward_sequence(obs, state0, st)
    b, _, _ = policy.forward_sequence(obs, policy.initial_state(B), torch.zeros(B, T))
    torch.testing.assert_close(a, b)


def test_backward_finite(data):
    obs, _, _, env = data
    policy = make_policy(env)
    o = obs[:8].transpose(0, 1)
    out, ent, _ = policy.forward_sequence(o, policy.initial_state(o.shape[0]), torch.zeros(o.shape[:2]))
    t = torch.zeros(o.shape[:2], dtype=torch.long)
    loss = policy.value(out).sum() + policy.a_logits(out, ent, t).sum() + policy.c_logits(out, ent, t, t, t).sum()
    loss.backward()
    grads = [p.grad for p in policy.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g_).all() for g_ in grads)


@pytest.mark.slow   # inductor C++ compile: ~10 s warm cache, 20-50 s cold on a loaded 2-core box
def test_torch_compile_matches_eager(data):
    obs, _, _, env = data
    policy = make_policy(env, card_embed_dim=8, entity_dim=16, hidden_size=16).eval()
    o = obs[4][:8].clone()
    B = o.shape[0]
    t = torch.tensor([0, 1, 2, 3, 4, 5, 6, 7])
    a = torch.arange(B) * 3 % LAYOUT["n_a"]
    b = torch.arange(B) * 5 % LAYOUT["n_b"]

    def fn(o, h, c, t, a, b):
        x, ent = policy.encode(o)
        out, (h, c) = policy.step(x, (h, c))
        return (policy.value(out), policy.type_logits(out), policy.a_logits(out, ent, t),
                policy.b_logits(out, ent, t, a), policy.c_logits(out, ent, t, a, b), h, c)

    state = (torch.randn(B, 16), torch.randn(B, 16))
    compiled = torch.compile(fn, mode="default", fullgraph=True)   # fullgraph: no graph breaks / host syncs
    with torch.no_grad():
        got = compiled(o, *state, t, a, b)
        want = fn(o, *state, t, a, b)
    for g_, w_ in zip(got, want):
        torch.testing.assert_close(g_, w_, rtol=1e-4, atol=1e-5)
