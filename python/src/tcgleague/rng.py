"""The process-wide random streams (python `random`, numpy's global, torch's CPU and CUDA).

tcgleague itself never draws from them - every stream it uses is its own seeded generator
(the trainer's torch.Generator, the matchmaker's, the bots', the frozen pool's) - but they are
seeded at the start of a run and carried through checkpoints, so user code that does draw from
them (a callback, a custom bot) is reproducible and resumes exactly too."""

from __future__ import annotations

import random

import numpy as np
import torch

# Every seeded stream of a run, as an offset from the seed it derives from ([base] seed, or a
# rank's seed under torchrun), so no two streams share a seed. A new stream takes a new name here.
SEED_OFFSETS = {
    "second_side": 1,  # the second side of a match (its sampling or bot stream), after the first's seed
    "frozen_pool": 1,  # the league's frozen members' sampling, from the rank's seed
    "match_filler": 2,  # a match's idle game slots (random moves), from the match's seed
    "league_random_bot": 2,  # the league's random bot, from the rank's seed
    "exploiter": 3,  # the main exploiter's initial weights and streams, from [base] seed
    "exploit_seats": 4,  # an exploit run's draws of the target's seat per game, from [base] seed
    "exploit_target": 5,  # an exploit run's target in its training games (sampling, salts, bot), from [base] seed
    "exploration": 6,  # which of the learner's training decisions explore (exploration.py), from the rank's seed and the epoch
    "evaluation": 1000,  # the trainer's periodic evaluation deals (+ the epoch), away from the env's seeds
}


def stream_seed(seed: int, stream: str) -> int:
    """The seed of `stream` (a SEED_OFFSETS name) for a run or match seeded `seed`."""
    return int(seed) + SEED_OFFSETS[stream]


def restore_generator(generator: torch.Generator, state, seed: int) -> bool:
    """Sets `generator` to a saved state; False (and reseeded with `seed`) when the state is of
    another device kind (a CPU generator's state cannot be set on a CUDA one: their sizes differ)."""
    saved = torch.as_tensor(state, dtype=torch.uint8)
    if saved.numel() == generator.get_state().numel():
        generator.set_state(saved)
        return True
    generator.manual_seed(seed)
    return False


def seed_global(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def global_state() -> dict:
    """The global streams as checkpoint-ready values (tensors and plain Python)."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy": {
            "kind": kind,
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None,
    }


def set_global_state(state: dict) -> None:
    random.setstate(state["python"])
    s = state["numpy"]
    np.random.set_state(
        (s["kind"], s["keys"].numpy().astype(np.uint32), s["pos"], s["has_gauss"], s["cached_gaussian"])
    )
    torch.set_rng_state(state["torch"])
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
