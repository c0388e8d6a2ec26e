"""TCGPolicy: config round trip, seeding, shapes, NONE row, what the encoder sees, entity attention,
and torch.compile. (The recurrence: recurrent.lstm_cell in test_recurrent.py; ppo.unroll and the PPO
loss's gradients in test_ppo.py.)"""

import pytest
import torch

from helpers.policy_data import make_policy, rollout_obs, zero_state
from tcgleague.actors import PolicyStep
from tcgleague.games.emberfront.engine import LAYOUT
from tcgleague.games.emberfront.layout import (
    OBS_BYTES,
    OBS_SIZE,
    effects_from_obs,
    features,
    features_np,
    legal_from_obs,
)
from tcgleague.games.emberfront.policy import PolicyConfig, gather_rows
from tcgleague.games.emberfront.sampler import TCGSampler, draw_uniforms


@pytest.fixture(scope="module")
def data():
    return rollout_obs()


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


def test_the_policy_computes_the_same_function_of_compact_rows_and_of_their_features():
    """The env's compact rows and the float32 features they hold (read by numpy, an independent
    decoding) are one input: bit-identical logits and values, and the same decisions."""
    compact, env = rollout_obs(steps=12, compact=True)
    rows = compact.reshape(-1, compact.shape[-1])
    floats = torch.from_numpy(features_np(rows.numpy()))
    assert rows.dtype == torch.uint8 and rows.shape[-1] == OBS_BYTES and floats.shape[-1] == OBS_SIZE
    n, hidden = rows.shape[0], 16
    h, c = torch.randn(n, hidden), torch.randn(n, hidden)
    for kw in ({}, {"legal_scorer_dim": 8, "legal_effect_dim": 4}):
        policy = make_policy(env, card_embed_dim=8, entity_dim=16, hidden_size=hidden, **kw)

        def logits_and_value(obs, policy=policy):
            f = features(obs)
            x, ent = policy.encode(f)
            out, _ = policy.step(x, (h, c))
            legal, _ = legal_from_obs(f)
            scores = (
                policy.legal_logits(out, ent, legal, effects_from_obs(f))
                if policy.scores_legal_list
                else policy.a_logits(out, ent, legal[:, 0, 0])
            )
            return scores, policy.value(out)

        with torch.no_grad():
            (got, got_v), (want, want_v) = logits_and_value(rows), logits_and_value(floats)
            assert torch.equal(got, want) and torch.equal(got_v, want_v)
            assert got.std() > 0 and got_v.std() > 0, "real logits, not constants"
            step = PolicyStep(policy, TCGSampler())
            params, uniforms = TCGSampler().params_tensor().expand(n, -1), draw_uniforms(n, torch.Generator())
            for a_, b_ in zip(step(rows, h, c, params, uniforms), step(floats, h, c, params, uniforms)):
                assert torch.equal(a_, b_)


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


# ---- torch.compile -------------------------------------------------------------------------------
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
