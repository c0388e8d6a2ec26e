"""Small policies and real observations for the policy and PPO tests (test_policy.py,
test_ppo.py)."""

from __future__ import annotations

import torch

from tcgleague.games.emberfront.env import TCGEnv
from tcgleague.games.emberfront.layout import features, legal_from_obs
from tcgleague.games.emberfront.policy import PolicyConfig, build_policy
from tcgleague.games.emberfront.sampler import TCGSampler


def zero_state(policy, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.zeros(batch, policy.hidden_size), torch.zeros(batch, policy.hidden_size)


def rollout_obs(num_games=8, steps=24, seed=0, compact=False):
    """Real observations from a random policy's legal play, as their float32 features [steps,
    2 * num_games, OBS_SIZE] (the policy's input), or as the env's compact rows with `compact`."""
    env = TCGEnv(num_games=num_games, seed=seed)
    obs, _ = env.reset()
    policy = build_policy(PolicyConfig(n_cards=env.pool.n_cards, entity_dim=16, hidden_size=16, card_embed_dim=8), seed)
    sampler = TCGSampler()
    generator = torch.Generator().manual_seed(seed)
    all_obs = []
    state = zero_state(policy, env.num_agents)
    with torch.no_grad():
        for _ in range(steps):
            o = features(torch.from_numpy(obs.copy()))
            all_obs.append(torch.from_numpy(obs.copy()) if compact else o)
            x, ent = policy.encode(o)
            out, state = policy.step(x, state)
            legal, count = legal_from_obs(o)
            actions, _, _ = sampler.sample(policy, out, ent, legal, count, generator=generator)
            obs, *_ = env.step(actions.numpy())
    return torch.stack(all_obs), env


def make_policy(env, seed=0, **kw):
    return build_policy(PolicyConfig(n_cards=env.pool.n_cards, **kw), seed)
