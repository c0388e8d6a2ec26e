"""The league's evaluation matches: two ids (bots or pool members) through the game's runner
(match.Runner: the one duplicate loop on the game's table), and a few games of each recorded for
the replay viewer (where the game's games can be recorded).

A candidate's matches are recorded when it is judged: the first `replay_games` games of each,
written to `<run>/replays/league_<a>_vs_<b>/` (replay.viewer.write_replays: replays.json and a
self-contained viewer.html), where the run report finds them and the league's events.jsonl line
of the match links them. Recording changes no game; only the newest RECORDED_MATCHES recordings
are kept, so a long run's replays stay small."""

from __future__ import annotations

import shutil
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, runtime_checkable

import torch

from ..match import Runner, policy_side
from ..replay import replay_document, write_replays
from ..rng import stream_seed
from ..scoring import Tally
from .members import MemberStore

PlayMatch = Callable[[str, str, int], Tally]  # (a, b, games) -> a's tally: the simplest match source (tests' scripts)


@runtime_checkable
class Matches(Protocol):
    """Where the league's evaluation matches come from: `prepare(a, b, games)` loads both sides
    now and returns the match to play (on any thread); `recording(a, b)` says where its recorded
    games go (relative to the run directory), None when none are."""

    def prepare(self, a: str, b: str, games: int) -> Callable[[], Tally]: ...

    def recording(self, a: str, b: str) -> str | None: ...


class PlayedMatches:
    """A plain PlayMatch as `Matches`: nothing is loaded ahead and nothing recorded."""

    def __init__(self, play: PlayMatch):
        self.play = play

    def prepare(self, a: str, b: str, games: int) -> Callable[[], Tally]:
        return lambda: self.play(a, b, games)

    def recording(self, a: str, b: str) -> str | None:
        return None


RECORDED_MATCHES = 24  # the newest league recordings kept under <run>/replays/
PREFIX = "league_"  # the league's recordings (evaluate_checkpoint's share the folder)


def recording_name(a: str, b: str) -> str:
    """The folder (under the run's replays/) of a's match vs b."""
    return f"{PREFIX}{a}_vs_{b}"


class MemberMatches:
    """`Matches` with the game's runner: ids are its bots or pool members (loaded from `store`).
    Seeded from (seed, a, b), so a match replays identically after a resume. Members play on
    `device` (the run's), at the runner's default number of games at once (a whole eval_games
    match in one wave: fewer, larger forwards). With `replays` (the run's replays folder) and
    `replay_games` > 0 the first games of each match are recorded there (where the runner's
    games can be recorded)."""

    def __init__(
        self,
        store: MemberStore,
        runner: Runner,
        device: torch.device,
        seed: int = 0,
        turn_cap: int | None = None,
        replays: Path | None = None,
        replay_games: int = 0,
    ):
        if not isinstance(device, torch.device):
            raise TypeError(f"members play on the run's device (a torch.device), got {device!r}")
        self.store, self.runner, self.device, self.seed, self.turn_cap = store, runner, device, int(seed), turn_cap
        self.replays = Path(replays) if replays is not None else None
        self.replay_games = int(replay_games) if runner.recorder else 0

    def side(self, member_id: str, seed: int):
        if member_id in self.runner.bots:
            return self.runner.bot_side(member_id, seed)
        policy, sampler = self.store.load(member_id)
        return policy_side(policy.to(self.device), sampler, seed, name=member_id)

    def recording(self, a: str, b: str) -> str | None:
        """Where a's match vs b is recorded, relative to the run directory; None when it is not."""
        if self.replays is None or self.replay_games <= 0:
            return None
        return f"{self.replays.name}/{recording_name(a, b)}"

    def prepare(self, a: str, b: str, games: int) -> Callable[[], Tally]:
        """The match with both sides loaded now: playing it (on any thread) reads no member store."""
        if games <= 0:
            return Tally  # nothing to play: an empty tally
        seed = (self.seed * 1_000_003 + zlib.crc32(f"{a}|{b}".encode())) % (2**31)
        extra = {"turn_cap": self.turn_cap} if self.turn_cap is not None else {}
        sides = self.side(a, seed), self.side(b, stream_seed(seed, "second_side"))
        if self.recording(a, b) is None:
            return lambda: self.runner.play(*sides, games, seed, **extra).tally

        def play_and_record() -> Tally:
            recorder = self.runner.recorder(self.replay_games, (a, b))
            report = self.runner.play(*sides, games, seed, recorder=recorder, **extra)
            document = replay_document(recorder.games(), title=f"league: {a} vs {b}", seed=seed, **extra)
            write_replays(self.replays / recording_name(a, b), document)
            self.forget_old_recordings()
            return report.tally

        return play_and_record

    def forget_old_recordings(self) -> None:
        """Keeps the newest RECORDED_MATCHES league recordings (by time written)."""
        folders = sorted(self.replays.glob(f"{PREFIX}*"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in folders[RECORDED_MATCHES:]:
            shutil.rmtree(old, ignore_errors=True)
