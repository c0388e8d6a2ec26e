"""`python -m tcgleague.checkpoint convert OLD.pt [NEW.pt]`: an older checkpoint rewritten as one
this code loads: numpy values (which `weights_only` loading refuses) as tensors and plain
containers, and a checkpoint of a convertible observation layout (the
same features, stored differently: `Game.convertible_layouts`) restamped with today's, its env buffers' rows re-encoded so
its resume stays exact.

The old file is read with `weights_only=True` plus an allowlist of numpy's array and scalar
reconstructors only, so converting never runs code either: a file that names anything else is
refused, naming it."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from ..atomic import atomic_write
from ..errors import entry_point, output_file
from ..fingerprint import checkpoint_game, obs_layout_hash
from ..game import GAME_NAMES, game_named
from .files import CheckpointError, LoadedCheckpoint, load_checkpoint, read_state, verify_archive

_multiarray = (getattr(np, "_core", None) or np.core).multiarray
NUMPY_GLOBALS = [
    _multiarray._reconstruct,
    _multiarray.scalar,
    np.ndarray,
    np.dtype,
    *(getattr(np.dtypes, name) for name in dir(np.dtypes) if name.endswith("DType")),
]


def plain(value):
    """`value` with numpy arrays as tensors and numpy scalars as Python numbers."""
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.array(value, copy=True))
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [plain(v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    return value


def running_games(state: dict) -> list[dict]:
    """Every rank's run state that holds env buffers (rank 0's at the top, the others' under dist.ranks)."""
    ranks = [state, *((state.get("dist") or {}).get("ranks") or {}).values()]
    runs = [part.get("run_state") for part in ranks if isinstance(part, dict)]
    return [r for r in runs if isinstance(r, dict) and isinstance(r.get("env"), dict) and "buffers" in r["env"]]


def convert_checkpoint(src: Path, dst: Path) -> LoadedCheckpoint:
    """Writes `src` as a checkpoint that loads with weights_only=True at `dst` (a new path)."""
    src, dst = Path(src), Path(dst)
    verify_archive(src)
    if dst.exists():
        raise CheckpointError(f"convert: {dst} exists; give a new path for the converted checkpoint")
    state = plain(read_state(src, NUMPY_GLOBALS))
    fingerprint, game = state.get("fingerprint"), checkpoint_game(state)
    layouts = game_named(game).convertible_layouts if game in GAME_NAMES else {}
    if isinstance(fingerprint, dict) and fingerprint.get("obs_layout_hash") in layouts:
        what, to_today = layouts[fingerprint["obs_layout_hash"]]
        fingerprint["obs_layout_hash"] = obs_layout_hash(game)
        for run in running_games(state):
            try:
                run["env"]["buffers"]["observations"] = to_today(run["env"]["buffers"]["observations"])
            except ValueError as err:
                raise CheckpointError(
                    f"convert: the env buffers' observations: {err}; not a checkpoint of {what}"
                ) from None
    atomic_write(dst, lambda f: torch.save(state, f))
    try:
        return load_checkpoint(dst)
    except CheckpointError:
        dst.unlink(missing_ok=True)  # converted, but still not a usable checkpoint: leave nothing behind
        raise


@entry_point("tcgleague.checkpoint")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tcgleague.checkpoint", description="Checkpoint tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    convert = sub.add_parser(
        "convert", help="rewrite an older checkpoint (numpy values, float32 observation rows) as one this code loads"
    )
    convert.add_argument("src", type=Path, help="the checkpoint to convert")
    convert.add_argument("dst", type=Path, nargs="?", help="where to write it (default: <src stem>.safe.pt)")
    args = parser.parse_args(argv)
    dst = args.dst or args.src.with_name(args.src.stem + ".safe.pt")
    output_file(dst, "DST")
    loaded = convert_checkpoint(args.src, dst)
    print(f"wrote {dst} (epoch {int(loaded.state['epoch'])}, global_step {loaded.global_step}): it loads safely")
    return 0
