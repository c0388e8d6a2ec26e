"""The league manager: pool membership, evaluation, ratings, payoff, promotion, state file.

Every `checkpoint_add_interval` epochs the learner is ingested as a *candidate*: it joins the
frozen pool at once (a past self is a useful opponent whether or not it is stronger) and is
evaluated - a match vs the champion and one vs each baseline (greedy). It is *promoted* to
champion only when
    * it played >= promotion_min_games games vs the champion, and the Wilson lower bound
      (z = promotion_z; draws count half) of its win rate clears promotion_min_winrate - a
      point estimate over 64 games would promote lucky noise - and
    * its win rate vs every baseline reaches baseline_min_winrate (a champion that loses to
      the greedy bot is not a champion, whatever it does vs its predecessor).
The first candidate has no champion to beat; only the baseline gate applies. Every decision
is logged with its reason ("wilson lower bound 0.48 < 0.55 over 64 games", "only 32 games
< 64", "baseline gate: 0.41 vs greedy < 0.6").

Ratings: OpenSkill Plackett-Luce per id (members and bots), updated game by game from
evaluation matches; reported as mu, sigma and the conservative mu - 3 sigma. The payoff
matrix holds decayed (wins, draws, games) per ordered pair, decayed once per update (a game
from training, a whole evaluation match), so old results fade as the learner moves;
"learner" vs member entries drive PFSP.

The pool is bounded to pool_size: the champion, the keep_recent newest, the keep_old oldest,
and the rest spread evenly by age (`retain_ids`). State lives in `<dir>/league_state.json`,
written atomically (temp + fsync + rename) with the previous version kept as `.bak`; loading
falls back to the `.bak` when the main file is missing or corrupt. Members ingested from
memory are written to `<dir>/members/<id>.pt` (keys "policy", "policy_config",
"sampling_params"), so the pool does not depend on checkpoints that `max_checkpoints` deletes.
"""
from __future__ import annotations

import json
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from openskill.models import PlackettLuce

from .atomic import atomic_write
from .bots import BOTS, greedy_actions, random_actions
from .env import TCGEnv
from .evaluate import PolicyActor, wilson_interval
from .opponents import load_member_policy, policy_from_state
from .policy.tcg_sampler import TCGSampler

STATE_FILE = "league_state.json"
STATE_VERSION = 1
BASELINES = ("greedy",)
LEARNER = "learner"
MAX_DECISIONS = 50          # recent decisions kept in the state file

PlayMatch = Callable[[str, str, int], tuple[int, int, int]]


# ---------------------------------------------------------------------------------------------
# Payoff and ratings
# ---------------------------------------------------------------------------------------------


class Payoff:
    """Decayed results per ordered pair (a, b): [wins of a, draws, games]. Each `update` first
    multiplies the pair's counts by `decay`, then adds the new results; win rate counts a draw
    as half a win, and is `prior` (0.5) for a pair that never met."""

    def __init__(self, decay: float):
        self.decay = float(decay)
        self.table: dict[tuple[str, str], list[float]] = {}

    def update(self, a: str, b: str, wins: float, losses: float, draws: float) -> None:
        for x, y, w in ((a, b, wins), (b, a, losses)):
            e = self.table.get((x, y), [0.0, 0.0, 0.0])
            self.table[(x, y)] = [e[0] * self.decay + w, e[1] * self.decay + draws,
                                  e[2] * self.decay + wins + losses + draws]

    def winrate(self, a: str, b: str, prior: float = 0.5) -> float:
        w, d, n = self.table.get((a, b), (0.0, 0.0, 0.0))
        return (w + 0.5 * d) / n if n > 0 else prior

    def games(self, a: str, b: str) -> float:
        return self.table.get((a, b), (0.0, 0.0, 0.0))[2]

    def forget(self, keep) -> None:
        """Drops pairs involving an id not in `keep` (bounded state as members retire)."""
        keep = set(keep)
        self.table = {k: v for k, v in self.table.items() if k[0] in keep and k[1] in keep}

    def state_dict(self) -> list:
        return [[a, b, *v] for (a, b), v in sorted(self.table.items())]

    def load_state_dict(self, rows: list) -> None:
        self.table = {(a, b): [float(w), float(d), float(n)] for a, b, w, d, n in rows}


def interleave(wins: int, losses: int, draws: int) -> list[int]:
    """Outcomes (1 win, -1 loss, 0 draw) spread evenly through the sequence: sequential
    rating updates depend on order, and 'all wins, then all losses' would end biased."""
    items = []
    for outcome, k in ((1, wins), (-1, losses), (0, draws)):
        items += [((i + 0.5) / k, outcome) for i in range(int(k))]
    return [o for _, o in sorted(items, key=lambda t: t[0])]


class Ratings:
    """OpenSkill Plackett-Luce ratings per id; a new id starts at the model's default."""

    def __init__(self):
        self.model = PlackettLuce()
        self.ratings: dict = {}

    def get(self, name: str):
        if name not in self.ratings:
            self.ratings[name] = self.model.rating(name=name)
        return self.ratings[name]

    def record(self, a: str, b: str, wins: int, losses: int, draws: int) -> None:
        for outcome in interleave(wins, losses, draws):
            ranks = [1, 2] if outcome > 0 else [2, 1] if outcome < 0 else [1, 1]
            [[ra], [rb]] = self.model.rate([[self.get(a)], [self.get(b)]], ranks=ranks)
            self.ratings[a], self.ratings[b] = ra, rb

    def mu(self, name: str) -> float:
        return float(self.get(name).mu)

    def sigma(self, name: str) -> float:
        return float(self.get(name).sigma)

    def conservative(self, name: str) -> float:
        """mu - 3 sigma: a rating the player is very probably above."""
        return self.mu(name) - 3.0 * self.sigma(name)

    def forget(self, keep) -> None:
        keep = set(keep)
        self.ratings = {k: v for k, v in self.ratings.items() if k in keep}

    def state_dict(self) -> dict:
        return {k: [float(r.mu), float(r.sigma)] for k, r in sorted(self.ratings.items())}

    def load_state_dict(self, state: dict) -> None:
        self.ratings = {k: self.model.rating(mu=float(mu), sigma=float(sigma), name=k)
                        for k, (mu, sigma) in state.items()}


# ---------------------------------------------------------------------------------------------
# Pool retention
# ---------------------------------------------------------------------------------------------


def retain_ids(ids_oldest_first: list[str], champion: str | None, pool_size: int, keep_recent: int,
               keep_old: int) -> list[str]:
    """The ids to keep (in age order): all when they fit; else the champion, the keep_recent
    newest, the keep_old oldest, and the remaining slots spread evenly by age over the rest
    (so the pool spans the whole history rather than only its ends)."""
    ids = list(ids_oldest_first)
    if len(ids) <= pool_size:
        return ids
    keep = set(ids[len(ids) - keep_recent:] if keep_recent > 0 else []) | set(ids[:keep_old])
    if champion in ids:
        keep.add(champion)
    slots = pool_size - len(keep)
    middle = [i for i in ids if i not in keep]
    if slots > 0 and middle:
        if slots >= len(middle):
            keep.update(middle)
        elif slots == 1:
            keep.add(middle[len(middle) // 2])
        else:
            picks = np.round(np.linspace(0, len(middle) - 1, slots)).astype(int)
            keep.update(middle[k] for k in picks)
    return [i for i in ids if i in keep]


# ---------------------------------------------------------------------------------------------
# Manager
# ---------------------------------------------------------------------------------------------


@dataclass
class Member:
    id: str
    order: int                      # ingest order: age
    step: int = 0
    epoch: int = 0
    path: str | None = None         # member file; None = held in memory (no league directory)
    policy_config: dict | None = None
    sampling_params: dict = field(default_factory=dict)


@dataclass
class Decision:
    candidate: str
    promoted: bool
    reason: str
    champion_before: str | None
    vs_champion: tuple[int, int, int] | None      # candidate's (wins, losses, draws)
    vs_baselines: dict[str, tuple[int, int, int]]
    lower_bound: float | None = None


def _score(result) -> tuple[float, int]:
    w, l, d = result
    return w + 0.5 * d, w + l + d


def atomic_write_text(path: Path, text: str, keep_backup: bool = False) -> None:
    """league_state.json: atomic, with the previous version kept as .bak."""
    atomic_write(path, lambda f: f.write(text.encode("utf-8")), keep_backup=keep_backup)


class LeagueManager:
    """Pool, evaluation, ratings, payoff and promotion for one run.

        mgr = LeagueManager(cfg.league, run_dir / "league", seed=cfg.base.seed)
        mgr.load()                                   # on resume (falls back to the .bak)
        mgr.ingest("e000010", state_dict=..., policy_config=..., step=..., epoch=10)
        decision = mgr.evaluate("e000010")           # plays, rates, decides, retains, saves

    `play_match(a, b, games) -> (wins, losses, draws)` (from a's side) is pluggable; the
    default `MatchPlayer` plays real games on a TCGEnv.
    """

    def __init__(self, cfg, directory: str | Path | None = None, play_match: PlayMatch | None = None,
                 seed: int = 0, log: Callable[[str], None] = print, baselines=BASELINES,
                 env_kwargs: dict | None = None):
        self.cfg = cfg
        self.directory = Path(directory) if directory is not None else None
        self.log = log
        self.baselines = tuple(baselines)
        self.play_match = (play_match if play_match is not None
                           else MatchPlayer(self.load_policy, seed, env_kwargs=env_kwargs))
        self.members: dict[str, Member] = {}          # the pool, in ingest order
        self.champion: str | None = None
        self.ratings = Ratings()
        self.payoff = Payoff(cfg.payoff_decay)
        self.promotions = 0
        self.candidates = 0
        self.next_order = 0
        self.decisions: list[dict] = []
        self._inline: dict[str, dict] = {}            # in-memory state dicts (no directory)
        self.retired: dict[str, dict] = {}            # last retirement round: id -> Member fields
        self._cache: dict[str, tuple] = {}
        if self.directory is not None:
            (self.directory / "members").mkdir(parents=True, exist_ok=True)

    # ---- pool ------------------------------------------------------------------------------
    @property
    def state_path(self) -> Path | None:
        return self.directory / STATE_FILE if self.directory is not None else None

    def pool_ids(self) -> list[str]:
        """Frozen members, oldest first."""
        return list(self.members)

    def ingest(self, member_id: str, path: str | Path | None = None, state_dict: dict | None = None,
               policy_config: dict | None = None, sampling_params: dict | None = None, step: int = 0,
               epoch: int = 0) -> Member:
        """Adds a candidate to the pool, from a checkpoint file (`path`) or from memory
        (`state_dict` + `policy_config`). With a league directory a slim copy is written to
        members/<id>.pt, so the member outlives checkpoint retention."""
        if member_id in self.members or member_id in BOTS or member_id == LEARNER or member_id == "self":
            raise ValueError(f"league member id {member_id!r} is already used or reserved")
        if (path is None) == (state_dict is None):
            raise ValueError("ingest needs exactly one of path= or state_dict=")
        if path is not None:
            data = torch.load(Path(path), map_location="cpu", weights_only=False)
            state_dict, policy_config = data["policy"], data["policy_config"]
            sampling_params = sampling_params or data.get("sampling_params") or {}
        if policy_config is None:
            raise ValueError("ingest from memory needs policy_config (PolicyConfig.to_dict())")
        slim = {"policy": {k.replace("_orig_mod.", ""): v.detach().to("cpu", copy=True)
                           for k, v in state_dict.items()},
                "policy_config": dict(policy_config), "sampling_params": dict(sampling_params or {}),
                "step": int(step), "epoch": int(epoch)}
        member = Member(member_id, self.next_order, int(step), int(epoch), None, dict(policy_config),
                        dict(sampling_params or {}))
        if self.directory is not None:
            file = self.directory / "members" / f"{member_id}.pt"
            atomic_write(file, lambda f: torch.save(slim, f))
            member.path = str(file)
        else:
            self._inline[member_id] = slim
        self.next_order += 1
        self.candidates += 1
        self.members[member_id] = member
        return member

    def load_policy(self, member_id: str):
        """(frozen policy, sampling params) of a pool member, or of one retired in the last
        round (games against it may still be running); cached while it is in the pool."""
        if member_id not in self._cache:
            m = self.members.get(member_id)
            if m is None and member_id in self.retired:
                m = Member(**self.retired[member_id])
                if m.path is None:
                    raise KeyError(f"retired in-memory member {member_id!r} is gone")
                return load_member_policy(m.path)
            if m is None:
                raise KeyError(f"{member_id!r} is not a league member (pool: {self.pool_ids()})")
            if m.path is not None:
                self._cache[member_id] = load_member_policy(m.path)
            else:
                slim = self._inline[member_id]
                self._cache[member_id] = (policy_from_state(slim["policy"], slim["policy_config"]),
                                          dict(slim["sampling_params"]))
        return self._cache[member_id]

    def retain(self) -> list[str]:
        """Applies pool retention; returns the removed ids (their ratings and payoff entries
        are dropped). A removed member's file is deleted one round later, at the next retain:
        games already running against it finish first, and a resume in between can still load
        it (`retired`)."""
        kept = retain_ids(self.pool_ids(), self.champion, self.cfg.pool_size, self.cfg.keep_recent,
                          self.cfg.keep_old)
        removed = [m for m in self.members if m not in kept]
        for old in self.retired.values():
            if old["path"] is not None and self.directory is not None and old["id"] not in self.members:
                Path(old["path"]).unlink(missing_ok=True)
        self.retired = {}
        for m in removed:
            member = self.members.pop(m)
            self._inline.pop(m, None)
            self._cache.pop(m, None)
            self.retired[m] = asdict(member)
        if removed:
            keep = set(self.members) | set(BOTS) | {LEARNER}
            self.payoff.forget(keep)
            self.ratings.forget(keep)
        return removed

    # ---- results ---------------------------------------------------------------------------
    def record_game(self, a: str, b: str, win: bool, loss: bool) -> None:
        """One finished training game of a (the learner) vs b: a payoff update (not rated:
        the learner moves every epoch)."""
        self.payoff.update(a, b, float(win), float(loss), float(not win and not loss))

    def record_match(self, a: str, b: str, result: tuple[int, int, int]) -> None:
        """An evaluation match: one payoff update and game-by-game rating updates."""
        w, l, d = (int(x) for x in result)
        self.payoff.update(a, b, w, l, d)
        self.ratings.record(a, b, w, l, d)

    def learner_winrates(self, ids) -> list[float]:
        return [self.payoff.winrate(LEARNER, m) for m in ids]

    # ---- evaluation and promotion --------------------------------------------------------------
    def decide(self, candidate: str, vs_champion, vs_baselines: dict) -> Decision:
        """The promotion rule on given results (no games played); see the module docstring."""
        cfg = self.cfg
        reasons, lower = [], None
        if vs_champion is not None:
            score, n = _score(vs_champion)
            if n < cfg.promotion_min_games:
                reasons.append(f"only {n} games < {cfg.promotion_min_games}")
            else:
                lower = wilson_interval(score, n, cfg.promotion_z)[0]
                if lower < cfg.promotion_min_winrate:
                    reasons.append(f"wilson lower bound {lower:.2f} < {cfg.promotion_min_winrate:g} over {n} games")
        for bot, result in vs_baselines.items():
            score, n = _score(result)
            rate = score / n if n else 0.0
            if rate < cfg.baseline_min_winrate:
                reasons.append(f"baseline gate: {rate:.2f} vs {bot} < {cfg.baseline_min_winrate:g}")
        promoted = not reasons
        if promoted:
            if vs_champion is None:
                reason = "promoted: first champion (passed the baseline gate)"
            else:
                reason = (f"promoted: wilson lower bound {lower:.2f} >= {cfg.promotion_min_winrate:g} "
                          f"over {_score(vs_champion)[1]} games")
        else:
            reason = "; ".join(reasons)
        return Decision(candidate, promoted, reason, self.champion,
                        tuple(vs_champion) if vs_champion is not None else None,
                        {k: tuple(v) for k, v in vs_baselines.items()}, lower)

    def evaluate(self, candidate: str) -> Decision:
        """Plays the candidate vs the champion and the baselines, records the results, applies
        the promotion rule, retains the pool, saves the state file; returns the decision."""
        if candidate not in self.members:
            raise KeyError(f"{candidate!r} is not a league member")
        games = self.cfg.eval_games
        vs_champion = None
        if self.champion is not None and self.champion != candidate:
            vs_champion = tuple(int(x) for x in self.play_match(candidate, self.champion, games))
            self.record_match(candidate, self.champion, vs_champion)
        vs_baselines = {}
        for bot in self.baselines:
            vs_baselines[bot] = tuple(int(x) for x in self.play_match(candidate, bot, games))
            self.record_match(candidate, bot, vs_baselines[bot])
        decision = self.decide(candidate, vs_champion, vs_baselines)
        if decision.promoted:
            self.champion = candidate
            self.promotions += 1
        self.log(f"[league] candidate {candidate}: {'PROMOTED' if decision.promoted else 'rejected'} - "
                 f"{decision.reason}")
        self.decisions = (self.decisions + [asdict(decision)])[-MAX_DECISIONS:]
        removed = self.retain()
        if removed:
            self.log(f"[league] retired {', '.join(removed)} (pool_size {self.cfg.pool_size})")
        if self.directory is not None:
            self.save()
        return decision

    # ---- metrics ---------------------------------------------------------------------------
    def metrics(self) -> dict[str, float]:
        out = {"league/pool_size": float(len(self.members)), "league/promotions": float(self.promotions),
               "league/candidates": float(self.candidates)}
        out["league/champion_rating"] = float("nan")  # logged always; NaN (null) until a first champion
        if self.champion is not None:
            out["league/champion_rating"] = self.ratings.conservative(self.champion)
            out["league/champion_mu"] = self.ratings.mu(self.champion)
            out["league/champion_sigma"] = self.ratings.sigma(self.champion)
        # the learner's decayed training win rate vs a few opponents (only those it has met)
        few = {"champion": self.champion, "random": "random", "greedy": "greedy"}
        if self.members:
            newest = next(reversed(self.members))
            few[newest] = newest
        for label, who in few.items():
            if who is not None and self.payoff.games(LEARNER, who) > 0:
                out[f"league/winrate_vs_{label}"] = self.payoff.winrate(LEARNER, who)
        return out

    # ---- state -----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """JSON-serialisable state (in-memory members' weights are not in it: use a directory
        for a run that must resume)."""
        return {"version": STATE_VERSION, "members": [asdict(m) for m in self.members.values()],
                "champion": self.champion, "ratings": self.ratings.state_dict(),
                "payoff": self.payoff.state_dict(), "payoff_decay": self.payoff.decay,
                "promotions": self.promotions, "candidates": self.candidates,
                "next_order": self.next_order, "decisions": self.decisions, "retired": self.retired}

    def load_state_dict(self, state: dict) -> None:
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"league state version {state.get('version')!r}, expected {STATE_VERSION}")
        members = {m["id"]: Member(**m) for m in state["members"]}
        missing = [m.id for m in members.values() if m.path is None and m.id not in self._inline]
        if missing:
            raise ValueError(f"league state names in-memory members {missing} whose weights are gone")
        # Retirement deletes member files, so a state older than the newest (e.g. an older
        # checkpoint's copy) can name members that are gone: drop them, loudly.
        lost = [m.id for m in members.values() if m.path is not None and not Path(m.path).is_file()]
        if lost:
            self.log(f"[league] WARNING: member files missing, dropping {', '.join(lost)} from the pool")
            members = {k: v for k, v in members.items() if k not in lost}
        self.members = members
        self.champion = state["champion"] if state["champion"] in members else None
        self.ratings.load_state_dict(state["ratings"])
        self.payoff.load_state_dict(state["payoff"])
        self.promotions, self.candidates = int(state["promotions"]), int(state["candidates"])
        self.next_order = int(state["next_order"])
        self.decisions = list(state["decisions"])
        self.retired = {k: dict(v) for k, v in state.get("retired", {}).items()}
        self._cache.clear()

    def save(self) -> Path:
        if self.state_path is None:
            raise ValueError("this league manager has no directory to save to")
        text = json.dumps(self.state_dict(), indent=1, sort_keys=True)
        atomic_write_text(self.state_path, text, keep_backup=True)
        return self.state_path

    def load(self) -> bool:
        """Loads league_state.json, or its .bak when the main file is missing or corrupt;
        False when neither exists (a fresh league)."""
        if self.state_path is None:
            raise ValueError("this league manager has no directory to load from")
        errors = []
        for path in (self.state_path, self.state_path.with_name(STATE_FILE + ".bak")):
            if not path.exists():
                continue
            try:
                self.load_state_dict(json.loads(path.read_text(encoding="utf-8")))
            except (ValueError, KeyError, TypeError, OSError) as e:
                errors.append(f"{path.name}: {e}")
                self.log(f"[league] WARNING: cannot load {path}: {e}")
                continue
            if errors:
                self.log(f"[league] WARNING: loaded the backup {path.name} ({'; '.join(errors)})")
            return True
        if errors:
            raise ValueError(f"no loadable league state in {self.directory}: {'; '.join(errors)}")
        return False


# ---------------------------------------------------------------------------------------------
# Real evaluation matches
# ---------------------------------------------------------------------------------------------


class MatchPlayer:
    """play_match on a TCGEnv: `games` games of a vs b, spread over up to `parallel` concurrent
    slots, each slot swapping seats every game (so seat advantage cancels). Ids are bots
    ("random", "greedy") or members resolved by `load(id) -> (policy, sampling params)`.
    `env_kwargs` (turn_cap, deck_pool, reward_shaping) should match the training env's.
    Seeded from (seed, a, b), so a match replays identically after a resume."""

    def __init__(self, load: Callable[[str], tuple], seed: int = 0, parallel: int = 64, argmax: bool = False,
                 env_kwargs: dict | None = None):
        self.load, self.seed, self.parallel, self.argmax = load, int(seed), int(parallel), argmax
        self.env_kwargs = {k: v for k, v in (env_kwargs or {}).items() if k not in ("num_games", "seed")}

    def _side(self, name: str, num_rows: int, generator: torch.Generator):
        if name in BOTS:
            return name
        policy, params = self.load(name)
        sampler = TCGSampler()
        if params:
            sampler.set_sampling_params(**{k: v for k, v in params.items()
                                           if k in ("primary_temperature", "subaction_temperature", "smoothing_eps")})
        return PolicyActor(policy, sampler, num_rows, policy.hidden_size, self.argmax, generator)

    @torch.no_grad()
    def __call__(self, a: str, b: str, games: int) -> tuple[int, int, int]:
        games = int(games)
        if games <= 0:
            return 0, 0, 0
        parallel = max(1, min(self.parallel, games))
        quota = np.full(parallel, games // parallel)
        quota[: games % parallel] += 1
        seed = (self.seed * 1_000_003 + zlib.crc32(f"{a}|{b}".encode())) % (2**31)
        env = TCGEnv(num_games=parallel, seed=seed, log_episodes=False, **self.env_kwargs)
        obs, _ = env.reset()
        rng = np.random.default_rng(seed)
        generator = torch.Generator().manual_seed(seed)
        sides = [self._side(a, env.num_agents, generator), self._side(b, env.num_agents, generator)]
        seat_a = np.arange(parallel) % 2                     # a's seat per slot, swapped each game
        played = np.zeros(parallel, dtype=np.int64)
        wins = losses = draws = 0
        actions = np.zeros((env.num_agents, 4), dtype=np.int32)
        while (played < quota).any():
            active = np.flatnonzero(env.masks)
            is_a = (active % 2) == seat_a[active // 2]
            for side, rows in ((sides[0], active[is_a]), (sides[1], active[~is_a])):
                if len(rows) == 0:
                    continue
                if side == "random":
                    actions[rows] = random_actions(obs[rows], rng)
                elif side == "greedy":
                    actions[rows] = greedy_actions(env, rows)
                else:
                    actions[rows] = side.act(obs, rows)[0]
            obs, rewards, terminals, truncations, _ = env.step(actions)
            done = np.flatnonzero(terminals[0::2] | truncations[0::2])
            for g in done:
                if played[g] < quota[g]:
                    r = rewards[2 * g + seat_a[g]]
                    wins += r > 0.5
                    losses += r < -0.5
                    draws += abs(r) <= 0.5
                played[g] += 1
            seat_a[done] ^= 1
            rows = np.concatenate([2 * done, 2 * done + 1])
            for side in sides:
                if not isinstance(side, str):
                    side.reset_rows(rows)
        return int(wins), int(losses), int(draws)
