"""The member store: the frozen past selves in the pool, their files, and who is retired.

Members are ingested from the learner's weights in memory and written to
`<league dir>/members/<id>.pt` as checkpoint-format policy files (checkpoint.save_policy), so
the pool does not depend on checkpoints that `max_checkpoints` deletes; they are read back
through checkpoint.load_checkpoint, the one load-and-validate path (no pickled code runs). A
store without a directory keeps the weights in memory (tests, benchmarks). A retired member's
file is deleted one retirement round later: games already running against it finish first, and
a resume in between can still load it."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..checkpoint import load_checkpoint, save_policy
from ..policy.tcg_policy import PolicyConfig, TCGPolicy, freeze, policy_from_state, strip_compile_prefix


def cpu_copy(state_dict: dict) -> dict:
    """Weights as fresh CPU tensors, without a compiled module's key prefix: what a member holds."""
    return {k: v.detach().to("cpu", copy=True) for k, v in strip_compile_prefix(state_dict).items()}


@dataclass
class Member:
    id: str
    order: int  # ingest order: age
    step: int = 0
    epoch: int = 0
    path: str | None = None  # member file; None = held in memory (no league directory)
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

    def __init__(self, directory: str | Path | None = None):
        self.directory = Path(directory) / "members" if directory is not None else None
        self.members: dict[str, Member] = {}
        self.retired: dict[
            str, dict
        ] = {}  # the last round's retirees and those running games still play: id -> Member fields
        self.next_order = 0
        self._inline: dict[str, dict] = {}  # in-memory weights (no directory)
        self._cache: dict[str, tuple[TCGPolicy, dict]] = {}
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
            save_policy(path, weights, member.policy_config, member.sampling_params, member.step, member.epoch)
            member.path = str(path)
        else:
            self._inline[member_id] = weights
        self.next_order += 1
        self.members[member_id] = member
        return member

    def load(self, member_id: str) -> tuple[TCGPolicy, dict]:
        """(frozen policy, sampling params) of a member, or of a retiree (the last round's, or one
        a running game still plays); cached while it is in the pool."""
        if member_id in self._cache:
            return self._cache[member_id]
        member = self.members.get(member_id)
        retired = member is None and member_id in self.retired
        if retired:
            member = Member(**self.retired[member_id])
        if member is None:
            raise KeyError(f"{member_id!r} is not a league member (pool: {self.ids()})")
        if member.path is not None:
            loaded = load_checkpoint(member.path)
            out = (freeze(loaded.policy), dict(loaded.state.get("sampling_params") or {}))
        elif member_id in self._inline:
            policy = policy_from_state(self._inline[member_id], PolicyConfig.from_dict(member.policy_config))
            out = (freeze(policy), dict(member.sampling_params))
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
        """Removes every member not in `keep`; deletes the files of earlier retirees, except those
        running games still play (`playing`): a resume of such a game loads the member its
        checkpoint names, so it stays a retiree (loadable) until no game plays it."""
        removed = [m for m in self.members if m not in keep]
        for old in self.retired.values():
            if old["path"] is not None and old["id"] not in self.members and old["id"] not in playing:
                Path(old["path"]).unlink(missing_ok=True)
                Path(old["path"]).with_suffix(".json").unlink(missing_ok=True)  # its sidecar
        self.retired = {m: old for m, old in self.retired.items() if m in playing}
        for m in removed:
            member = self.members.pop(m)
            self._inline.pop(m, None)
            self._cache.pop(m, None)
            self.retired[m] = asdict(member)
        return removed

    def state_dict(self) -> dict:
        return {
            "members": [asdict(m) for m in self.members.values()],
            "next_order": self.next_order,
            "retired": self.retired,
        }

    def load_state_dict(self, state: dict, log=print) -> None:
        members = {m["id"]: Member(**m) for m in state["members"]}
        missing = [m.id for m in members.values() if m.path is None and m.id not in self._inline]
        if missing:
            raise ValueError(f"league state names in-memory members {missing} whose weights are gone")
        # Retirement deletes member files, so a state older than the newest (e.g. an older
        # checkpoint's copy) can name members that are gone: drop them, loudly.
        lost = [m.id for m in members.values() if m.path is not None and not Path(m.path).is_file()]
        if lost:
            log(f"[league] WARNING: member files missing, dropping {', '.join(lost)} from the pool")
            members = {k: v for k, v in members.items() if k not in lost}
        self.members = members
        self.next_order = int(state["next_order"])
        self.retired = {k: dict(v) for k, v in state.get("retired", {}).items()}
        self._cache.clear()
        kept = set(self.members) | set(self.retired)  # in-memory weights of anyone else are unreachable
        self._inline = {k: v for k, v in self._inline.items() if k in kept}
