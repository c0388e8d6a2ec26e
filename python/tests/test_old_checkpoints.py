"""Checkpoints written before the games moved into games/<game>/ (committed in tests/data/, one
Emberfront smoke run and one Leduc run of one epoch each, 2026-11-28): they still load, play and
resume, and their fingerprints' old source paths are read as today's files, not as files gone."""

from __future__ import annotations

import shutil
from pathlib import Path

import torch

from tcgleague.checkpoint.files import load_checkpoint, read_state
from tcgleague.fingerprint import MOVED_SOURCES, changed_sources, source_hashes

DATA = Path(__file__).parent / "data"
EMBERFRONT = DATA / "emberfront_before_layout.pt"
LEDUC = DATA / "leduc_before_layout.pt"


def test_the_committed_checkpoints_name_the_old_paths():
    for path in (EMBERFRONT, LEDUC):
        stored = read_state(path)["fingerprint"]["source_hashes"]
        assert "engine/rules.c" in stored and "games/rules.py" in stored, sorted(stored)
        assert not any(name.startswith("games/emberfront/") for name in stored)


def test_old_paths_are_read_as_the_moved_files():
    current = source_hashes()
    assert set(MOVED_SOURCES.values()) <= set(current), "every moved file is still fingerprinted"
    for path in (EMBERFRONT, LEDUC):
        changed = changed_sources(read_state(path)["fingerprint"]["source_hashes"], current)
        assert not [c for c in changed if "gone from the code" in c], changed
        moved_as_new = [c for c in changed if c.split(" ")[0] in MOVED_SOURCES.values() and "new in the code" in c]
        assert not moved_as_new, changed
        # a file moved unchanged is not reported at all: the C engine did not change in the move
        assert "games/emberfront/engine/rules.c" not in changed


def test_a_planted_old_path_of_a_changed_file_is_still_reported():
    current = source_hashes()
    old_names = {new: old for old, new in MOVED_SOURCES.items()}
    stored = {old_names.get(name, name): digest for name, digest in current.items()}
    assert changed_sources(stored, current) == []
    stored["engine/tcg.h"] = "0" * 64
    assert changed_sources(stored, current) == ["games/emberfront/engine/tcg.h"]


def test_old_checkpoints_load_and_act(tmp_path):
    for path, game in ((EMBERFRONT, "emberfront"), (LEDUC, "leduc")):
        copy = tmp_path / path.name
        shutil.copy(path, copy)
        loaded = load_checkpoint(copy, log=lambda _: None, run_state=True, game=game)
        assert loaded.state["fingerprint"]["game"] == game
        assert all(torch.isfinite(p).all() for p in loaded.policy.parameters())
