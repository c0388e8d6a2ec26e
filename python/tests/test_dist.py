"""Data-parallel training under torchrun (gloo, two CPU ranks): one run directory, identical
replicas, exact resume (also through an elastic restart), a failing rank stopping the job, the
league across ranks; and the pieces (metric merging, rank seeds, the league replica, the
checkpoint's per-rank fields) on their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from helpers.state_compare import assert_same
from tcgleague import train as train_cli
from tcgleague.checkpoint import CheckpointError, load_checkpoint
from tcgleague.config import ConfigError, DistSection, LeagueSection, load_config
from tcgleague.devices import loss_compile_mode
from tcgleague.dist import SINGLE, TORCHRUN_VARIABLES, Dist, init_distributed, merge_rank_metrics, weights_digest
from tcgleague.games.emberfront.engine.cards import load_card_pool
from tcgleague.games.emberfront.game import EMBERFRONT_RUNNER
from tcgleague.games.emberfront.layout import NAME as EMBERFRONT
from tcgleague.games.emberfront.policy import PolicyConfig, build_policy
from tcgleague.league import LeagueManager
from tcgleague.scoring import Tally

ROOT = Path(__file__).resolve().parents[2]
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
COMMON = [
    "--config",
    "configs/smoke.ini",
    "--train.checkpoint-interval",
    "1",
    "--train.max-checkpoints",
    "10",
    "--base.torch-threads",
    "1",
    "--train.ent-coef-initial",
    "0.02",
    "--train.ent-coef-final",
    "0.0",
]
# What may differ between two identical runs: timings, and where the files were written.
VOLATILE = ("perf/", "dist/rank0_sps")

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def torchrun(base: Path, *args: str, script: str = "train.py", launcher=(), env=None) -> subprocess.CompletedProcess:
    cmd = [*TORCHRUN, *launcher, script, *COMMON, "--base.experiments-dir", str(base), *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})


def run_dirs(base: Path) -> list[Path]:
    return sorted((p for p in base.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime_ns)


def ckpt(run_dir: Path, epoch: int) -> dict:
    return torch.load(run_dir / f"model_smoke_{epoch:06d}.pt", weights_only=True)


def metrics_lines(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]


EXACT_KEYS = ("policy", "optimizer", "scheduler", "rng", "run_state", "league", "dist", "anneal", "metrics", "epoch")


def assert_exact_continuation(straight: dict, resumed: dict) -> None:
    for key in EXACT_KEYS:
        assert_same(straight[key], resumed[key], key, VOLATILE)


@pytest.fixture(scope="module")
def selfplay(tmp_path_factory):
    """A 2-rank self-play smoke run, 4 epochs, a checkpoint every epoch."""
    base = tmp_path_factory.mktemp("selfplay")
    proc = torchrun(base)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return base, proc


@pytest.fixture(scope="module")
def league(tmp_path_factory):
    base = tmp_path_factory.mktemp("league")
    proc = torchrun(base, "--league-enable")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return base, proc


# ---- torchrun --nproc_per_node 2 ------------------------------------------------------------------
def test_two_ranks_write_one_run_directory_and_keep_identical_replicas(selfplay):
    base, proc = selfplay
    (run_dir,) = run_dirs(base)
    assert "global batch 2 x 512 = 1024 decisions per epoch" in proc.stdout
    lines = metrics_lines(run_dir)
    assert len(lines) == 4
    for line in lines:
        assert line["dist/world_size"] == 2 and line["dist/replicas_in_sync"] == 1.0
        assert line["dist/rank0_sps"] > 0
        assert line["perf/sps"] == pytest.approx(2 * 512 / line["perf/epoch_seconds"])
    assert [("eval/winrate_vs_greedy" in line) for line in lines] == [False, True, False, True], "rank 0 evaluates"
    for epoch in (2, 4):  # mid-run and final: every rank's weights hash to the saved ones
        state = ckpt(run_dir, epoch)
        assert state["dist"]["world_size"] == 2 and set(state["dist"]["ranks"]) == {"1"}
        assert state["dist"]["weight_digests"] == [weights_digest(state["policy"])] * 2
        other = state["dist"]["ranks"]["1"]["run_state"]
        assert other["env"]["engines"] != state["run_state"]["env"]["engines"], "each rank plays its own games"
        assert not torch.equal(other["state_h"], state["run_state"]["state_h"])
    assert ckpt(run_dir, 1)["global_step"] == 512, "global_step counts one rank's decisions, like batch_size"


def test_two_rank_resume_is_bit_identical_to_straight_training(selfplay, tmp_path):
    base, _ = selfplay
    (run_a,) = run_dirs(base)
    proc = torchrun(tmp_path, "--resume-checkpoint", str(run_a / "model_smoke_000002.pt"), "--resume-load-optimizer")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "exact continuation" in proc.stdout and "WARNING" not in proc.stdout + proc.stderr
    (run_b,) = run_dirs(tmp_path)
    assert_exact_continuation(ckpt(run_a, 4), ckpt(run_b, 4))
    assert ckpt(run_b, 4)["resumed_from"] == str(run_a / "model_smoke_000002.pt")


@pytest.mark.slow
def test_three_rank_resume_is_bit_identical_too(tmp_path):
    """With 3+ ranks the all-reduce's summation order follows DDP's bucket layout, which DDP
    rebuilds after its first backward: the updater settles it before the first real step."""
    three = ("--nproc_per_node", "3")
    straight = torchrun(tmp_path / "a", "--train.eval-interval", "0", launcher=three)
    assert straight.returncode == 0, straight.stderr[-3000:]
    (run_a,) = run_dirs(tmp_path / "a")
    resumed = torchrun(
        tmp_path / "b",
        "--train.eval-interval",
        "0",
        "--resume-checkpoint",
        str(run_a / "model_smoke_000002.pt"),
        "--resume-load-optimizer",
        launcher=three,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    (run_b,) = run_dirs(tmp_path / "b")
    final = ckpt(run_a, 4)
    assert final["dist"]["world_size"] == 3 and len(set(final["dist"]["weight_digests"])) == 1
    assert_exact_continuation(final, ckpt(run_b, 4))


@pytest.mark.slow
@pytest.mark.parametrize("failure", ["raises", "SIGKILL"])
def test_elastic_restart_resumes_from_latest_and_continues_exactly(selfplay, tmp_path, failure):
    """Rank 1 fails in epoch 3 of the first attempt (an error, or killed as when its node is
    lost); torchrun --max-restarts 1 starts the job again with the same arguments, and
    `--resume-checkpoint latest` (a fresh start the first time) continues from epoch 2 - to the
    same weights as the run that never failed."""
    base, _ = selfplay
    (straight,) = run_dirs(base)
    proc = torchrun(
        tmp_path,
        "--resume-checkpoint",
        "latest",
        "--resume-load-optimizer",
        script="python/tests/helpers/dist_failing_rank.py",
        launcher=("--max-restarts", "1", "--monitor-interval", "0.5"),
        env={"FAIL_RANK": "1", "FAIL_EPOCH": "3", "FAIL_ONCE": "1", "FAIL_KILL": str(int(failure == "SIGKILL"))},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "starting fresh" in proc.stderr
    # which failure torchrun's agent reports first is a race (the survivor's collective breaks too)
    assert f"injected {'failure' if failure == 'raises' else 'SIGKILL'} on rank 1 in epoch 3" in proc.stderr
    first, second = run_dirs(tmp_path)
    saved = sorted(first.glob("*.pt"))
    assert saved[-1].name in ("model_smoke_000001.pt", "model_smoke_000002.pt"), "no epoch 3: it failed"
    assert ckpt(second, 4)["resumed_from"] == str(saved[-1])
    assert_exact_continuation(ckpt(straight, 4), ckpt(second, 4))


def test_a_failing_rank_stops_the_whole_job_with_its_error(tmp_path):
    start = time.monotonic()
    proc = torchrun(
        tmp_path, script="python/tests/helpers/dist_failing_rank.py", env={"FAIL_RANK": "1", "FAIL_EPOCH": "2"}
    )
    elapsed = time.monotonic() - start
    assert proc.returncode != 0 and elapsed < 60, (proc.returncode, elapsed)
    failures = proc.stderr.split("FAILED")[-1]  # torchrun's summary: every rank's failure, a root cause first
    assert "rank      : 1" in failures and "RuntimeError: injected failure on rank 1 in epoch 2" in failures
    (run_dir,) = run_dirs(tmp_path)
    assert (run_dir / "model_smoke_000001.pt").is_file(), "what was saved before the failure stays"


def test_a_refused_input_under_torchrun_is_the_summary_root_cause_without_a_traceback(tmp_path):
    proc = torchrun(tmp_path / "exp", "--resume-checkpoint", str(tmp_path / "missing.pt"))
    summary = proc.stderr.split("Root Cause")[-1]
    assert proc.returncode != 0
    assert f"train: checkpoint refused: checkpoint {tmp_path / 'missing.pt'} not found" in summary, summary
    assert "Traceback" not in summary and not (tmp_path / "exp").exists(), "nothing is created"


@pytest.mark.slow  # fast set: a refused input under torchrun, a failing rank
def test_a_damaged_league_state_stops_every_rank_with_the_same_error(league, tmp_path):
    base, _ = league
    (run_a,) = run_dirs(base)
    state = torch.load(run_a / "model_smoke_000002.pt", weights_only=True)
    state["league"]["manager"]["payoff"] = "not a payoff table"
    damaged = run_a / "damaged.pt"  # in its run directory, where the members it names are
    torch.save(state, damaged)
    proc = torchrun(tmp_path / "exp", "--league-enable", "--resume-checkpoint", str(damaged))
    damaged.unlink()
    assert proc.returncode != 0
    refusal = f"train: checkpoint refused: checkpoint {damaged} is damaged: field league.manager"
    root_cause = proc.stderr.split("Root Cause")[-1]  # whichever rank torchrun saw fail first: the same line
    assert refusal in root_cause and "Traceback" not in root_cause, proc.stderr[-3000:]


def test_nccl_on_a_cpu_rank_is_refused_before_joining_the_job(monkeypatch):
    """What the torchrun test below checks end to end, in-process: a rank started by torchrun
    with [dist] backend nccl and a CPU device is refused before any process group exists."""
    for name in TORCHRUN_VARIABLES:
        monkeypatch.setenv(name, "0")
    with pytest.raises(ConfigError, match=r"\[dist\] backend nccl needs CUDA, and this rank's device is cpu"):
        init_distributed(DistSection(backend="nccl"), torch.device("cpu"))
    assert not torch.distributed.is_initialized()


@pytest.mark.slow  # fast set: test_nccl_on_a_cpu_rank_is_refused_before_joining_the_job, and a refused input's root cause
@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_nccl_without_cuda_is_refused_at_start(tmp_path):
    proc = torchrun(tmp_path, "--base.device", "auto", "--dist.backend", "nccl")
    assert proc.returncode != 0
    root_cause = proc.stderr.split("Root Cause")[-1]
    assert "train: config error: [dist] backend nccl needs CUDA" in root_cause, proc.stderr[-2000:]
    assert "Traceback" not in root_cause


@pytest.mark.slow  # fast set: a failing rank stops the whole job with its error (a killed one: torchrun's own detection)
def test_a_rank_killed_mid_epoch_ends_the_job_naming_it(tmp_path):
    """SIGKILL (a lost node) cannot be caught: torchrun's agent sees the rank's process die and
    stops the others, which wait for it in the epoch's collective, well within the collective
    timeout; what was saved before stays."""
    start = time.monotonic()
    proc = torchrun(
        tmp_path,
        "--dist.timeout-seconds",
        "30",
        script="python/tests/helpers/dist_failing_rank.py",
        launcher=("--monitor-interval", "0.5"),
        env={"FAIL_RANK": "1", "FAIL_EPOCH": "2", "FAIL_KILL": "1"},
    )
    elapsed = time.monotonic() - start
    assert proc.returncode != 0 and elapsed < 60, (proc.returncode, elapsed)
    failures = proc.stderr.split("FAILED")[-1]  # torchrun's summary: the rank and how it died
    assert "rank      : 1" in failures and "SIGKILL" in failures, failures[-2000:]
    (run_dir,) = run_dirs(tmp_path)
    assert (run_dir / "model_smoke_000001.pt").is_file()
    load_checkpoint(run_dir / "model_smoke_000001.pt", run_state=True, log=lambda m: None)


@pytest.mark.slow  # fast set: a failing rank, a killed rank
def test_a_hung_rank_fails_the_job_after_the_collective_timeout(tmp_path):
    start = time.monotonic()
    proc = torchrun(
        tmp_path,
        "--dist.timeout-seconds",
        "5",
        script="python/tests/helpers/dist_failing_rank.py",
        env={"FAIL_RANK": "1", "FAIL_EPOCH": "2", "FAIL_HANG": "1"},
    )
    elapsed = time.monotonic() - start
    assert proc.returncode != 0 and elapsed < 60, (proc.returncode, elapsed)
    assert "timed out" in proc.stderr.lower() or "timeout" in proc.stderr.lower(), proc.stderr[-2000:]


@pytest.mark.slow
def test_league_across_ranks_resumes_exactly(league, tmp_path):
    base, proc = league
    (run_a,) = run_dirs(base)
    assert "[league] candidate e000001" in proc.stdout
    assert (run_a / "league" / "league_state.json").is_file()
    lines = metrics_lines(run_a)
    assert all(line["dist/world_size"] == 2 for line in lines)
    assert max(line["league/frozen_fraction"] for line in lines) > 0, "frozen members play once the league starts"
    final = ckpt(run_a, 4)
    assert final["dist"]["weight_digests"] == [weights_digest(final["policy"])] * 2
    rank1 = final["dist"]["ranks"]["1"]["league"]
    assert "manager" in final["league"] and set(rank1) == {"league"}, "the manager is saved once, by its owner"
    codes = [r["league"]["matchmaker"]["game_code"] for r in (final["league"], rank1)]
    assert [len(c) for c in codes] == [16, 16] and codes[0] != codes[1], "each rank draws for its own games"

    resumed = torchrun(
        tmp_path,
        "--league-enable",
        "--resume-checkpoint",
        str(run_a / "model_smoke_000002.pt"),
        "--resume-load-optimizer",
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    (run_b,) = run_dirs(tmp_path)
    assert_exact_continuation(final, ckpt(run_b, 4))


def test_a_checkpoint_of_another_world_size_restores_the_weights_and_reseeds_the_games(selfplay, tmp_path, capsys):
    base, _ = selfplay
    (run_a,) = run_dirs(base)
    rc = train_cli.main(
        [*COMMON, "--base.experiments-dir", str(tmp_path), "--resume-checkpoint", str(run_a / "model_smoke_000003.pt")]
        + ["--resume-load-optimizer"]
    )
    out = capsys.readouterr().out
    assert rc == 0
    assert "written by 2 rank(s), this job has 1" in out and "re-seeded" in out
    (run_b,) = run_dirs(tmp_path)
    final = ckpt(run_b, 4)
    assert final["global_step"] == 2048 and "dist" in final and final["dist"]["world_size"] == 1


# ---- the pieces ------------------------------------------------------------------------------------
def test_metrics_merge_sums_counts_weights_means_and_takes_the_slowest_rank():
    a = {"environment/episodes": 3.0, "environment/episode_turns": 10.0, "losses/value_loss": 1.0}
    a |= {"perf/epoch_seconds": 2.0, "perf/sps": 256.0, "eval/winrate_vs_greedy": 0.25}
    b = {"environment/episodes": 1.0, "environment/episode_turns": 30.0, "losses/value_loss": 3.0}
    b |= {"perf/epoch_seconds": 4.0, "perf/sps": 128.0}
    merged = merge_rank_metrics([a, b], batch_size=512)
    assert merged["environment/episodes"] == 4.0
    assert merged["environment/episode_turns"] == pytest.approx((3 * 10 + 30) / 4)
    assert merged["losses/value_loss"] == 2.0
    assert merged["perf/epoch_seconds"] == 4.0 and merged["perf/sps"] == pytest.approx(1024 / 4.0)
    assert merged["eval/winrate_vs_greedy"] == 0.25
    assert merge_rank_metrics([a], batch_size=512) == a, "one rank: its own metrics, unchanged"
    shared = {"train/learning_rate": 0.1, "losses/first_nonfinite_step": 0.0, "eval/x": 1.0}
    three = merge_rank_metrics([shared, {**shared, "losses/first_nonfinite_step": 3.0, "eval/x": 0.0}, shared], 512)
    assert three["train/learning_rate"] == 0.1, "a value every rank shares is kept exactly (no float mean)"
    assert three["losses/first_nonfinite_step"] == 3.0, "a failure step is the worst rank's"
    assert "league/only_rank_1" in merge_rank_metrics([{}, {"league/only_rank_1": 2.0}], 512)


def test_rank_seeds_keep_rank_zero_on_the_base_seed_and_differ_per_rank():
    seeds = [Dist(rank=r, world_size=4, backend="gloo").rank_seed(7) for r in range(4)]
    assert seeds[0] == 7 == SINGLE.rank_seed(7)
    assert len(set(seeds)) == 4 and all(0 <= s < 2**31 for s in seeds)
    assert seeds == [Dist(rank=r, world_size=4, backend="gloo").rank_seed(7) for r in range(4)]


def test_a_replica_manager_holds_the_pool_in_memory_and_drops_retired_weights(tmp_path):
    cfg = LeagueSection(enable=True, pool_size=2, keep_recent=1, keep_old=0)
    owner = LeagueManager(
        cfg,
        tmp_path / "league",
        play=lambda a, b, n: Tally(n, 0, 0),
        log=lambda m: None,
        runner=EMBERFRONT_RUNNER,
        game=EMBERFRONT,
    )
    replica = LeagueManager(
        cfg, None, log=lambda m: None, device=torch.device("cpu"), runner=EMBERFRONT_RUNNER, game=EMBERFRONT
    )
    arch = PolicyConfig(n_cards=load_card_pool().n_cards, hidden_size=16)
    sent: set[str] = set()
    for k in range(4):
        policy = build_policy(arch, seed=k)
        owner.ingest(f"m{k}", policy.state_dict(), arch.to_dict(), {"primary_temperature": 1.0}, step=k)
        owner.evaluate(f"m{k}")
        owner.record_game("learner", f"m{k}", win=True, loss=False)
        snapshot = owner.snapshot(sent)
        assert set(snapshot["weights"]) == (set(owner.pool_ids()) | set(owner.store.retired)) - sent
        replica.replicate(snapshot)
        sent = set(owner.pool_ids()) | set(owner.store.retired)
        assert replica.pool_ids() == owner.pool_ids() and replica.champion == owner.champion
        assert replica.state_dict()["payoff"] == owner.state_dict()["payoff"]
        for m in owner.pool_ids():
            mine, theirs = owner.load_policy(m)[0].state_dict(), replica.load_policy(m)[0].state_dict()
            assert all(torch.equal(mine[n], theirs[n]) for n in mine)
    assert replica.directory is None and not any((tmp_path / "league").glob("**/*replica*"))
    held = set(replica.store._inline)
    assert held == set(owner.pool_ids()) | set(owner.store.retired) and len(held) < 4, "older retirees dropped"


def test_checkpoint_rank_fields_are_validated(selfplay, tmp_path):
    base, _ = selfplay
    (run_dir,) = run_dirs(base)
    src = run_dir / "model_smoke_000002.pt"
    for edit, field in (
        (lambda s: s["dist"]["ranks"].pop("1"), "dist.ranks"),
        (lambda s: s["dist"].update(weight_digests=["x"]), "dist.weight_digests"),
        (lambda s: s["dist"]["ranks"]["1"]["run_state"].update(state_h=torch.zeros(3)), "dist.ranks.1.run_state"),
        (lambda s: s["dist"].update(world_size=0), "dist.world_size"),
    ):
        state = torch.load(src, weights_only=True)
        edit(state)
        torch.save(state, tmp_path / "bad.pt")
        with pytest.raises(CheckpointError, match=field.replace(".", r"\.")):
            load_checkpoint(tmp_path / "bad.pt")


@pytest.mark.parametrize(
    "override, message",
    [
        (["--dist.backend", "mpi"], "[dist] backend"),
        (["--dist.backend", "nccl", "--base.device", "cpu"], "nccl needs CUDA"),
        (["--dist.timeout-seconds", "0"], "[dist] timeout_seconds"),
    ],
)
def test_bad_dist_settings_are_config_errors(override, message):
    with pytest.raises(ConfigError) as err:
        load_config(str(ROOT / "configs/smoke.ini"), override)
    assert message in str(err.value)


def test_the_loss_compiles_without_cuda_graphs_only_under_ddp_on_cuda():
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    assert loss_compile_mode("reduce-overhead", cuda, data_parallel=True) == "default"
    assert loss_compile_mode("max-autotune", cuda, data_parallel=True) == "max-autotune-no-cudagraphs"
    assert loss_compile_mode("reduce-overhead", cuda, data_parallel=False) == "reduce-overhead"
    assert loss_compile_mode("reduce-overhead", cpu, data_parallel=True) == "reduce-overhead"
    assert loss_compile_mode(None, cuda, data_parallel=True) is None


@pytest.mark.slow
def test_bench_scale_reports_sps_per_rank_count(tmp_path):
    out = tmp_path / "scale.json"
    argv = ["scale", "--config", "configs/smoke.ini", "--nproc", "1,2", "--epochs", "2", "--warmup-epochs", "1"]
    proc = subprocess.run(
        [sys.executable, "-m", "tcgleague.bench", *argv, "--json", str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(out.read_text())
    assert set(figures["sps_by_nproc"]) == {"1", "2"} and all(v > 0 for v in figures["sps_by_nproc"].values())
    assert [len(v) for v in figures["sps_per_epoch_by_nproc"].values()] == [2, 2]
    sps = figures["sps_by_nproc"]
    assert figures["efficiency_by_nproc"]["2"] == pytest.approx(sps["2"] / (2 * sps["1"]))
    bad = subprocess.run(
        [sys.executable, "-m", "tcgleague.bench", "scale", "--nproc", "0,x"], cwd=ROOT, capture_output=True, text=True
    )
    assert bad.returncode == 2 and "--nproc '0,x'" in bad.stderr and "Traceback" not in bad.stderr
