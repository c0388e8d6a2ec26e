"""PuffeRL's side of `python -m tcgleague.bench peer`: trains PufferLib 3.0.23's PuffeRL on
`VersusBot` and evaluates its snapshots (the command line of `tcgleague.games.emberfront.peers`). It lives
outside the package because it imports `pufferlib.pufferl`, which the product never does
(process-wide side effects); `bench peer` runs it as a subprocess from a checkout.

    python tools/pufferl_peer.py train --steps 500000 --out DIR
    python tools/pufferl_peer.py evaluate --snapshot DIR/snapshot_....pt --json OUT
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path

import pufferlib.emulation
import pufferlib.pufferl as pufferl
import pufferlib.vector
import torch

from tcgleague.games.emberfront.peers.pufferl_policy import CONFIG, NUM_ENVS, PeerLSTM, load, puff_advantage
from tcgleague.games.emberfront.peers.shared import SnapshotLog, command_line
from tcgleague.games.emberfront.peers.versus_bot import VersusBot


def train(steps: int, seed: int, log: SnapshotLog) -> None:
    if not pufferl._C_AVAILABLE:
        pufferl.compute_puff_advantage = puff_advantage
        print("pufferl: pufferlib._C does not load here; using the pure-torch advantage stand-in", flush=True)
    torch.manual_seed(seed)  # PuffeRL samples from the global generator (this is its own process)
    vecenv = pufferlib.vector.make(
        pufferlib.emulation.GymnasiumPufferEnv,
        env_kwargs={"env_creator": VersusBot},
        backend=pufferlib.vector.Serial,
        num_envs=NUM_ENVS,
        seed=seed * NUM_ENVS,
    )
    policy = PeerLSTM()
    print(f"PuffeRL: {sum(p.numel() for p in policy.parameters()):,} parameters", flush=True)
    # at least one batch: PuffeRL divides by total_timesteps // batch_size
    total = max(steps, CONFIG["batch_size"])
    config = dict(CONFIG, seed=seed, total_timesteps=total, data_dir=str(log.out / "pufferl"))
    trainer = pufferl.PuffeRL(config, vecenv, policy)
    start = time.perf_counter()

    def save(path: Path) -> None:
        torch.save(policy.state_dict(), path)

    while trainer.global_step < steps:
        trainer.evaluate()
        trainer.train()
        seconds = time.perf_counter() - start
        if log.due(trainer.global_step, seconds) or trainer.global_step >= steps:
            log.add(trainer.global_step, seconds, save)
    trainer.close()  # also stops its utilization thread, which would keep the process alive


if __name__ == "__main__":
    code = 1
    try:
        code = command_line(train, load)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # PuffeRL's utilization thread is no daemon: after a failure it would hang the process
