"""The member store: the frozen past selves in the pool, their files, and who is retired.

Members are ingested from the learner's weights in memory and written to
`<league dir>/members/<id>.pt` as checkpoint-format policy files (checkpoint.save_policy), so
the pool does not depend on checkpoints that `max_checkpoints` deletes; they are read back
through checkpoint.load_checkpoint, the one load-and-validate path (no pickled code runs). A
store without a directory keeps the weights in memory (tests, benchmarks). A retired member stays
loadable for one retirement round (games already running against it finish first), longer while
running games still play it. Its file is deleted only once a checkpoint that no longer names it
is on disk (`prune`): the newest checkpoint's members are always there, whatever moment a run
is killed at.

A member's path is stored relative to the run directory (`league/members/<id>.pt`), so a run
directory copied to another path or machine resumes from its new place: a resume reads the files
from the checkpoint's run directory (`origin`) and links or copies them into its own, so this
run's retirements never delete another run's files. A member whose file is gone is an error,
unless the resume allows dropping it (`allow_missing`)."""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..atomic import atomic_write
from ..checkpoint import CheckpointError, load_checkpoint, save_policy
from ..game import DEFAULT_GAME, family_of
from ..opponent_side import Origin
from ..policy.family import Policy, Sampler, freeze, strip_compile_prefix


def cpu_copy(state_dict: dict) -> dict:
    """Weights as fresh CPU tensors, without a compiled module's key prefix: what a member holds."""
    return {k: v.detach().to("cpu", copy=True) for k, v in strip_compile_prefix(state_dict).items()}


@dataclass
class Member:
    id: str
    order: int  # ingest order: age
    step: int = 0
    epoch: int = 0
    path: str | None = None  # member file, relative to the run directory; None = held in memory
    policy_config: dict | None = None
    sampling_params: dict = field(default_factory=dict)


def in_memory(state: dict) -> dict:
    """A store's state (or a manager's, which holds it) with every member held in memory rather
    than in a file: how a replica on another rank, which writes no files, loads its owner's."""
    return {
        **state,
        "members": [{**m, "path": None} for m in state["members"]],
        "retired": {k: {**v, "path": None} for k, v in state.get("retired", {}).items()},
    }


class MemberStore:
    """Pool members oldest first, their weights on disk (or in memory), a load cache."""

    def __init__(self, directory: str | Path | None = None, game: str = DEFAULT_GAME):
        """`directory`: the run's league directory (`<run>/league`); None = weights in memory.
        `game`: what the members play (stamped into their files' fingerprints)."""
        self.game = game
        self.run_dir = Path(directory).parent if directory is not None else None
        self.directory = Path(directory) / "members" if directory is not None else None
        self.members: dict[str, Member] = {}
        self.retired: dict[
            str, dict
        ] = {}  # the last round's retirees and those running games still play: id -> Member fields
        self.next_order = 0
        self._inline: dict[str, dict] = {}  # in-memory weights (no directory)
        self._cache: dict[str, tuple[Policy, Sampler]] = {}
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)

    def __contains__(self, member_id: str) -> bool:
        return member_id in self.members

    def ids(self) -> list[str]:
        """Members, oldest first."""
        return list(self.members)

    def ingest(
        self,
        member_id: str,
        state_dict: dict,
        policy_config: dict,
        sampling_params: dict | None = None,
        step: int = 0,
        epoch: int = 0,
    ) -> Member:
        """Adds a copy of a policy's weights as a frozen member. A member file that cannot be
        written (full disk, no permission) raises errors.WriteError with nothing added and no
        file left, and the run stops rather than skip the candidate: the same storage holds the
        checkpoints and the league state, so going on would train epochs that cannot be saved."""
        weights = cpu_copy(state_dict)
        member = Member(
            member_id, self.next_order, int(step), int(epoch), None, dict(policy_config), dict(sampling_params or {})
        )
        if self.directory is not None:
            path = self.directory / f"{member_id}.pt"
            save_policy(
                path, weights, member.policy_config, member.sampling_params, member.step, member.epoch, self.game
            )
            member.path = path.relative_to(self.run_dir).as_posix()
        else:
            self._inline[member_id] = weights
        self.next_order += 1
        self.members[member_id] = member
        return member

    def load(self, member_id: str) -> tuple[Policy, Sampler]:
        """(frozen policy, its sampler set to its sampling params) of a member, or of a retiree
        (the last round's, or one a running game still plays); cached while it is in the pool."""
        if member_id in self._cache:
            return self._cache[member_id]
        member = self.members.get(member_id)
        retired = member is None and member_id in self.retired
        if retired:
            member = Member(**self.retired[member_id])
        if member is None:
            raise KeyError(f"{member_id!r} is not a league member (pool: {self.ids()})")
        if member.path is not None:
            loaded = load_checkpoint(self.file(member.path))
            family = family_of(loaded.policy_config.to_dict())
            out = (freeze(loaded.policy), family.sampler_from_params(loaded.state.get("sampling_params")))
        elif member_id in self._inline:
            family = family_of(member.policy_config)
            policy = family.from_state(self._inline[member_id], family.config_from_dict(member.policy_config))
            out = (freeze(policy), family.sampler_from_params(member.sampling_params))
        else:
            raise KeyError(f"retired in-memory member {member_id!r} is gone")
        if not retired:
            self._cache[member_id] = out
        return out

    def weights(self, member_id: str) -> dict:
        """A member's (or a last-round retiree's) weights as CPU tensors: what a replica is sent."""
        policy, _ = self.load(member_id)
        return cpu_copy(policy.state_dict())

    def hold(self, weights: dict[str, dict]) -> None:
        """Keeps members' weights in memory (a replica's, sent by rank 0) for a following
        `load_state_dict(in_memory(state))`."""
        self._inline.update(weights)

    def retire(self, keep: list[str], playing: Collection[str] = ()) -> list[str]:
        """Removes every member not in `keep` (they become this round's retirees); earlier
        retirees stop being loadable, except those running games still play (`playing`): a
        resume of such a game loads the member its checkpoint names. No file is deleted here."""
        removed = [m for m in self.members if m not in keep]
        self.retired = {m: old for m, old in self.retired.items() if m in playing}
        for m in removed:
            member = self.members.pop(m)
            self._inline.pop(m, None)
            self._cache.pop(m, None)
            self.retired[m] = asdict(member)
        return removed

    def prune(self) -> list[str]:
        """Deletes the member files (and sidecars) this store no longer names; returns their ids.
        Called right after a checkpoint of this store's state is written, so what goes is what
        no newer checkpoint names."""
        if self.directory is None:
            return []
        keep = {*self.members, *self.retired}
        gone = sorted(p for p in self.directory.glob("*.pt") if p.stem not in keep)
        for path in gone:
            path.unlink(missing_ok=True)
            path.with_suffix(".json").unlink(missing_ok=True)
        return [p.stem for p in gone]

    def state_dict(self) -> dict:
        return {
            "members": [asdict(m) for m in self.members.values()],
            "next_order": self.next_order,
            "retired": self.retired,
        }

    def file(self, path: str) -> Path:
        """A member file's place: `path` under this run's directory (an absolute path, as states
        written before paths were relative hold, is itself)."""
        return self.run_dir / path if self.run_dir is not None else Path(path)

    def load_state_dict(self, state: dict, log=print, origin: Origin | None = None) -> None:
        """Restores `state_dict()`. `origin`: where the state was saved (its member files are read
        in that run directory and adopted into this run's); None = by this run."""
        members = {m["id"]: Member(**m) for m in state["members"]}
        missing = [m.id for m in members.values() if m.path is None and m.id not in self._inline]
        if missing:
            raise ValueError(f"league state names in-memory members {missing} whose weights are gone")
        retired = {k: Member(**v) for k, v in state.get("retired", {}).items()}
        lost = self.adopt([*members.values(), *retired.values()], origin.run_dir if origin else None)
        if lost and not (origin and origin.allow_missing_members):
            raise CheckpointError(
                f"league member file(s) missing: {'; '.join(f'{m} ({p})' for m, p in lost.items())} - copy the "
                "run directory whole, or resume with --league-allow-missing-members to drop them from the pool"
            )
        if lost:
            log(f"[league] WARNING: member files missing, dropping {', '.join(lost)} from the pool")
        self.members = {k: m for k, m in members.items() if k not in lost}
        self.next_order = int(state["next_order"])
        self.retired = {k: asdict(m) for k, m in retired.items() if k not in lost}
        self._cache.clear()
        kept = set(self.members) | set(self.retired)  # in-memory weights of anyone else are unreachable
        self._inline = {k: v for k, v in self._inline.items() if k in kept}

    def adopt(self, members: list[Member], origin: Path | None) -> dict[str, str]:
        """Makes each member's file this run's (`league/members/<id>.pt` under its directory),
        linked or copied from `origin`'s once it loads (a file that would run code is refused);
        returns {id: where it was looked for} of those whose file is gone."""
        lost = {}
        for m in members:
            if m.path is None:
                continue
            source = origin / m.path if origin is not None else self.file(m.path)
            if not source.is_file() and origin is not None and self.directory is not None:
                source = origin / self.directory.relative_to(self.run_dir) / Path(m.path).name  # an older absolute path
            if not source.is_file():
                lost[m.id] = str(source)
            elif self.directory is None:
                m.path = str(source)
            else:
                own = self.directory / f"{m.id}.pt"
                if not own.exists():  # refused here, named where it is, before it is this run's
                    load_checkpoint(source, log=lambda msg: None)
                for a, b in ((source, own), (source.with_suffix(".json"), own.with_suffix(".json"))):
                    if a.is_file() and not b.exists():
                        link_or_copy(a, b)
                m.path = own.relative_to(self.run_dir).as_posix()
        return lost


def link_or_copy(source: Path, target: Path) -> None:
    """`target` as a hard link to `source` (no bytes copied), or a copy written atomically where
    links are impossible (another file system)."""
    try:
        os.link(source, target)
    except OSError:
        data = source.read_bytes()
        atomic_write(target, lambda f: f.write(data))
