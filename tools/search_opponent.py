"""Screen: does training against a *searching* copy of itself teach the learner more per step
than plain self-play?

Every league lever measured so far (PFSP weightings, frozen and verification shares, main
exploiters) reshuffles opponents no stronger than the learner's own latest self, and the 16M
pairs end even with self-play. A copy of the learner that looks a turn ahead before each move
(lookahead.LookaheadActor, the same weights refreshed every epoch) is stronger than the learner
(an 8M checkpoint searching beat its plain self 0.695, README) and punishes the tactical
mistakes plain self-play leaves unpunished, while it keeps tracking the learner.

    python tools/search_opponent.py --share 0.5 -- --steps 2000000 --eval-every 500000 \
        --curve-episodes 128 --lookahead 0 --base.torch-threads 1 --json experiments/results/s2m_search05.json

trains `bench learn` (everything after `--`) with `share` of the games against the searching
copy: the learner plays one seat of those games and trains on it only, the copy plays the other;
the other games are self-play. Not resumable (its state is not checkpointed): a screen only.
At 2M steps with share 0.5 it matched the default vs greedy (0.643 against 0.646) and lost the
head-to-head 0.477 at 0.65x the SPS (experiments/README.md), so it is not a league option."""

from __future__ import annotations

import argparse
import copy
import json
import shlex
import sys
from pathlib import Path

import numpy as np
import torch

from tcgleague.actors import PolicyActor
from tcgleague.bench import learn
from tcgleague.bench.__main__ import main as bench_main
from tcgleague.env import TCGEnv
from tcgleague.lookahead import DEFAULT_VALUE_WEIGHT, LookaheadActor
from tcgleague.policy.tcg_policy import unwrap
from tcgleague.policy.tcg_sampler import TCGSampler

SEARCH_SEED_OFFSET = 5  # the copy's sampling and re-deal streams: away from the learner's


class SearchSelf:
    """An OpponentSide (opponent_side.py): `share` of the games, drawn at each episode's end,
    are the learner (random seat) against its latest weights searching a turn ahead."""

    def __init__(self, env: TCGEnv, policy: torch.nn.Module, share: float, seed: int, value_weight: float):
        self.share, self.num_games = share, env.num_games
        self.copy = copy.deepcopy(unwrap(policy)).eval().requires_grad_(False)
        device = next(self.copy.parameters()).device
        generator = torch.Generator(device=device).manual_seed(seed)
        inner = PolicyActor(self.copy, TCGSampler(), env.num_agents, generator, name="search")
        self.actor = LookaheadActor(inner, env, seed, value_weight)
        self.rng = np.random.default_rng([seed, 0x5EA7C])
        self.search_game = np.zeros(self.num_games, dtype=bool)
        self.learner_seat = np.zeros(self.num_games, dtype=np.int64)
        self.learner_mask = np.ones(env.num_agents, dtype=bool)
        self.tally = np.zeros(3)  # learner's wins, losses, draws against the copy this epoch

    def draw(self, games: np.ndarray) -> None:
        self.search_game[games] = self.rng.random(len(games)) < self.share
        self.learner_seat[games] = self.rng.integers(0, 2, len(games))
        for seat in (0, 1):
            self.learner_mask[2 * games + seat] = ~self.search_game[games] | (self.learner_seat[games] == seat)
        self.actor.reset_rows(np.concatenate([2 * games, 2 * games + 1]))

    def start(self, global_step: int) -> None:
        self.draw(np.arange(self.num_games))

    def split(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return rows[self.learner_mask[rows]], rows[~self.learner_mask[rows]]

    def act(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return self.actor.act(obs, rows)

    def after_step(self, rewards, terminals, truncations, infos, global_step: int) -> np.ndarray:
        mask = self.learner_mask.copy()
        done = np.flatnonzero(terminals[0::2] | truncations[0::2])
        for g, info in zip(done, infos):
            if self.search_game[g]:
                winner, seat = info["winner"], self.learner_seat[g]
                self.tally += [winner == seat, winner == 1 - seat, winner not in (seat, 1 - seat)]
        if len(done):
            self.draw(done)
        return mask

    def finish_collect(self, obs, rows) -> None:
        pass

    def end_epoch(self, epoch, global_step, policy, sampler) -> None:
        self.copy.load_state_dict(unwrap(policy).state_dict())

    def metrics(self) -> dict[str, float]:
        wins, losses, draws = self.tally
        games = self.tally.sum()
        self.tally[:] = 0
        return {"league/search_games": games, "league/search_learner_winrate": (wins + 0.5 * draws) / max(1.0, games)}

    def state_dict(self) -> None:
        return None

    def load_state_dict(self, state, exact: bool, log=print) -> None:
        pass


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--share", type=float, required=True, help="share of the games against the searching copy")
    p.add_argument("--value-weight", type=float, default=DEFAULT_VALUE_WEIGHT)
    p.add_argument("bench_args", nargs=argparse.REMAINDER, help="-- then `bench learn` arguments")
    args = p.parse_args()
    bench_args = [a for a in args.bench_args if a != "--"]
    plain_build = learn.build_trainer

    def build(cfg, run_dir, logger=None):
        trainer = plain_build(cfg, run_dir, logger)
        seed = cfg.base.seed + SEARCH_SEED_OFFSET
        trainer.opponents = SearchSelf(trainer.env.engine_env, trainer.policy, args.share, seed, args.value_weight)
        return trainer

    learn.build_trainer = build
    status = bench_main(["learn", *bench_args])
    if "--json" in bench_args:  # the row's command: this script's, not bench learn's
        out = Path(bench_args[bench_args.index("--json") + 1])
        figures = json.loads(out.read_text())
        figures["command"] = shlex.join(["python", "tools/search_opponent.py", *sys.argv[1:]])
        out.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
