"""The C engine under AddressSanitizer + UndefinedBehaviorSanitizer, driven through more than
1,000,000 random-legal decisions plus greedy-bot, lookahead, set-up and inspection calls
(`make sanitize`).

The engine sources are compiled into tmp_path with -fsanitize=address,undefined and loaded in a
subprocess as `tcgleague.games.emberfront.engine._tcg` in place of the optimised build; the ASan runtime is
preloaded because the Python interpreter itself is not instrumented."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[1] / "src" / "tcgleague" / "games" / "emberfront" / "engine"
MIN_DECISIONS = 1_000_000

DRIVER = textwrap.dedent("""
    import importlib.util, sys
    so = sys.argv[1]
    spec = importlib.util.spec_from_file_location("tcgleague.games.emberfront.engine._tcg", so)
    module = importlib.util.module_from_spec(spec)
    sys.modules["tcgleague.games.emberfront.engine._tcg"] = module
    spec.loader.exec_module(module)
    import numpy as np
    import tcgleague.games.emberfront.engine
    assert tcgleague.games.emberfront.engine.Engine is module.Engine, "the sanitized build was not the one imported"
    from tcgleague.games.emberfront.bots import greedy_actions, random_actions
    from tcgleague.games.emberfront.env import IllegalActionError, TCGAECEnv, TCGEnv

    decisions = 0
    rng = np.random.default_rng(0)
    # 1. the bulk: random-legal play, shaping on, default turn cap
    env = TCGEnv(num_games=1024, seed=1, reward_shaping=0.1)
    obs, _ = env.reset()
    episodes = 0
    for step in range(1000):
        _, _, _, _, infos = env.step(random_actions(obs, rng))
        decisions += env.num_games
        episodes += len(infos)
        if step % 250 == 0:
            env.render(step % env.num_games)
    assert episodes > 1000, episodes
    # 2. greedy bot in both seats, then greedy vs random, short turn cap (truncations); lookaheads
    env = TCGEnv(num_games=64, seed=2, turn_cap=8)
    layout = tcgleague.games.emberfront.engine.LAYOUT
    next_obs = np.zeros((layout["max_legal"], layout["obs_bytes"]), np.uint8)
    status = np.zeros(layout["max_legal"], np.int8)
    obs, _ = env.reset()
    for step in range(300):
        if step % 2:
            actions = greedy_actions(env)
        else:  # random, with greedy searching a subset of the games
            actions = random_actions(obs, rng)
            some = np.flatnonzero(env.masks)[::2]
            actions[some] = greedy_actions(env, some)
        for game in range(step % 4, env.num_games, 4):  # the lookahead of every candidate move
            env.engine.lookahead(game, step, next_obs, status)
        env.step(actions)
        decisions += env.num_games
    # 3. explicit deals, position round trips, a refused step, rendering every game
    for game in range(env.num_games):
        env.set_deal(game, 1000 + game, game % len(env.pool.deck_names), (game * 7) % len(env.pool.deck_names), bool(game % 2))
        env.engine.import_position(game, env.engine.export_position(game))
        env.render(game)
    env.engine.set_state(env.engine.get_state())
    bad = random_actions(obs, rng)
    bad[np.flatnonzero(env.masks)[0]] = [3, 0, 0, 0]
    try:
        env.step(bad)
    except IllegalActionError:
        pass
    for step in range(200):
        env.step(random_actions(obs, rng))
        decisions += env.num_games
    # 4. the PettingZoo adapter, a few games
    aec = TCGAECEnv(turn_cap=10)
    for game in range(5):
        aec.reset(seed=game)
        for agent in aec.agent_iter():
            o, r, term, trunc, info = aec.last()
            if term or trunc:
                aec.step(None)
            else:
                aec.step(int(rng.integers(int(o["action_mask"].sum()))))
                decisions += 1
        aec.render()
    print(f"DECISIONS {decisions}")
""")


def build_sanitized(tmp_path: Path) -> Path:
    out = tmp_path / ("_tcg" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    sources = sorted(str(p) for p in ENGINE.glob("*.c"))
    cmd = [
        "gcc",
        "-O1",
        "-g",
        "-std=c11",
        "-fopenmp",
        "-fsanitize=address,undefined",
        "-fno-sanitize-recover=undefined",
        "-fno-omit-frame-pointer",
        "-shared",
        "-fPIC",
        f"-I{sysconfig.get_paths()['include']}",
        f"-I{ENGINE}",
        *sources,
        "-o",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"sanitized build failed:\n{proc.stderr}"
    return out


def runtime_library(name: str) -> str:
    path = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(path) or not os.path.exists(path):
        pytest.skip(f"gcc has no {name}")
    return path


@pytest.mark.slow
def test_engine_is_clean_under_asan_and_ubsan(tmp_path):
    so = build_sanitized(tmp_path)
    env = dict(os.environ)
    env["LD_PRELOAD"] = " ".join([runtime_library("libasan.so"), runtime_library("libubsan.so")])
    env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=0:halt_on_error=1"
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, str(so)], capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path
    )
    report = f"exit {proc.returncode}\nstdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-6000:]}"
    assert proc.returncode == 0, report
    for marker in ("runtime error", "AddressSanitizer", "ERROR"):
        assert marker not in proc.stderr, report
    count = re.search(r"DECISIONS (\d+)", proc.stdout)
    assert count and int(count.group(1)) >= MIN_DECISIONS, report
