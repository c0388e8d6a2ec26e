"""setup.py builds the engine on a toolchain whose link-time optimisation is broken (the GPU
machine's GCC: "ld: error: could not run lto-wrapper"): it retries without -flto, and the
module it builds loads and plays. Marked slow: it compiles the engine twice."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# A compiler that compiles anything but cannot link LTO: it refuses a link that asks for -flto
# or is handed an object holding LTO bytecode (so stale -flto objects cannot slip through).
BROKEN_LTO_GCC = textwrap.dedent("""\
    #!/usr/bin/env bash
    if [[ " $* " == *" -shared "* ]]; then
        for arg in "$@"; do
            if [[ $arg == -flto ]] || { [[ $arg == *.o ]] && readelf -S "$arg" | grep -q gnu.lto_; }; then
                echo "/usr/bin/ld: error: could not run lto-wrapper" >&2; exit 1
            fi
        done
    fi
    exec gcc "$@"
""")

PLAY = textwrap.dedent("""\
    import numpy as np
    import tcgleague.games.emberfront.engine
    from tcgleague.games.emberfront.bots import random_actions
    from tcgleague.games.emberfront.env import TCGEnv
    assert tcgleague.games.emberfront.engine.__file__.startswith(__import__("sys").argv[1]), tcgleague.games.emberfront.engine.__file__
    env = TCGEnv(num_games=8, seed=1)
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(300):
        obs, _, _, _, infos = env.step(random_actions(obs, rng))
        episodes += len(infos)
    assert episodes > 0, "no game ended"
    print("played", episodes)
""")


@pytest.mark.slow  # compiles the engine twice
def test_the_engine_builds_without_lto_where_the_toolchain_cannot_link_it(tmp_path):
    shutil.copy(ROOT / "setup.py", tmp_path)
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    shutil.copytree(
        ROOT / "python" / "src", tmp_path / "python" / "src", ignore=shutil.ignore_patterns("*.so", "__pycache__")
    )
    gcc = tmp_path / "gcc"
    gcc.write_text(BROKEN_LTO_GCC)
    gcc.chmod(0o755)
    env = {**os.environ, "CC": str(gcc), "LDSHARED": f"{gcc} -shared"}
    build = subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert build.returncode == 0, build.stderr[-2000:]
    assert "could not run lto-wrapper" in build.stderr, "the broken toolchain was not the one used"
    assert "building it without" in build.stdout
    src = tmp_path / "python" / "src"
    assert list((src / "tcgleague" / "games" / "emberfront" / "engine").glob("_tcg*.so")), "no engine module was built"
    played = subprocess.run(
        [sys.executable, "-c", PLAY, str(src)],
        env={**os.environ, "PYTHONPATH": str(src)},
        capture_output=True,
        text=True,
    )
    assert played.returncode == 0 and "played" in played.stdout, played.stderr[-2000:]
