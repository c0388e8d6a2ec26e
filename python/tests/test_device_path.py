"""The device-resident rollout and update: the collect loop reads nothing back from the device per
env step (its host reads do not grow with the number of steps), StepTransfer's upload is a view on
the CPU and carries rows, slots and flags exactly, the compiled decision step (no recompile, same
actions as eager), bf16 autocast of the loss, what `auto` resolves to, and episode starts zeroing the
LSTM state. (The rollout buffer's spare slot and GAE against a float64 reference: test_rollout.py.)

Tests marked `gpu` need CUDA and are skipped without it: no sync in the hot loop under
`torch.cuda.set_sync_debug_mode("error")`, no CUDA-graph re-recording in a later epoch, bf16 on CUDA.
"""

from __future__ import annotations

import copy
import functools
from collections import Counter
from contextlib import contextmanager

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from tcgleague.actors import PolicyActor
from tcgleague.build import build_trainer
from tcgleague.config import load_config
from tcgleague.devices import compile_mode_for, resolve_device
from tcgleague.games.emberfront.layout import ACTION_WIDTH, OBS_BYTES
from tcgleague.games.emberfront.sampler import draw_uniforms
from tcgleague.ppo import STAT_NAMES, PPOUpdater, UpdateSettings
from tcgleague.rows import RowFormat
from tcgleague.trainer import Trainer
from tcgleague.transfer import StepTransfer

SMOKE = "configs/smoke.ini"
NUM_GAMES = 16  # the smoke config's; self-play stores one decision per game per env step
CUDA = torch.cuda.is_available()


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def smoke_trainer(*overrides: str) -> Trainer:
    cfg = load_config(SMOKE, ["--train.eval-interval", "0", *overrides])
    return build_trainer(cfg, None)


def batch_of(batch_size: int, minibatch_size: int = 256) -> tuple[str, ...]:
    return ("--train.batch-size", str(batch_size), "--train.minibatch-size", str(minibatch_size))


# ---- 1. no host read per env step ------------------------------------------------------------
# Python-level reads of a tensor's value: on CUDA each one waits for the device.
HOST_READS = ("item", "tolist", "numpy", "cpu", "__float__", "__int__", "__bool__", "__index__")
# aten ops whose output shape depends on tensor data: on CUDA they sync inside the C++ kernel, where
# the Python-level wrappers cannot see them. (`aten._local_scalar_dense`, the op under .item(), is
# not counted here: on the CPU, F.one_hot validates its input with two internal .item() calls that
# CUDA skips, so it would flag a CPU-only read. Python-level reads are counted by the wrappers.)
DATA_DEPENDENT_OPS = frozenset(
    {
        "aten.nonzero",
        "aten.masked_select",
        "aten.masked_scatter",
        "aten._unique",
        "aten._unique2",
        "aten.unique_dim",
        "aten.unique_consecutive",
        "aten.equal",
        "aten.is_nonzero",
        "aten.repeat_interleave",
        "aten.bincount",
    }
)
INDEX_OPS = frozenset({"aten.index", "aten.index_put", "aten.index_put_", "aten._index_put_impl_"})
# how host data becomes a tensor: on CUDA each is a host->device copy besides StepTransfer.upload's
HOST_DATA_IN = ("tensor", "as_tensor", "asarray", "from_numpy")
LIFT_OPS = frozenset({"aten.lift_fresh", "aten.lift_fresh_copy"})


def _has_bool_index(args) -> bool:
    indices = args[1] if len(args) > 1 else ()
    return any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in indices or ())


class OpCounter(TorchDispatchMode):
    """Counts the aten ops that read tensor data on the host (data-dependent output shapes, boolean
    masks) and the ones that turn Python data into a tensor."""

    def __init__(self, calls: Counter):
        super().__init__()
        self.calls = calls

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func.overloadpacket)
        if name in DATA_DEPENDENT_OPS or (name in INDEX_OPS and _has_bool_index(args)):
            self.calls[name] += 1
        if name in LIFT_OPS:
            self.calls[name] += 1
        return func(*args, **(kwargs or {}))


@contextmanager
def counting_host_reads(monkeypatch):
    """Counts, while the block runs: Python-level reads of tensor values (HOST_READS), data-dependent
    aten ops (DATA_DEPENDENT_OPS, boolean-mask indexing), and host data made into tensors
    (HOST_DATA_IN, aten.lift_fresh). Every wrapper calls the original."""
    calls = Counter()

    def counted(name, original):
        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return original(*args, **kwargs)

        return wrapper

    with monkeypatch.context() as mp:
        for name in HOST_READS:
            mp.setattr(torch.Tensor, name, counted(name, getattr(torch.Tensor, name)))
        for name in HOST_DATA_IN:
            mp.setattr(torch, name, counted(f"torch.{name}", getattr(torch, name)))
        with OpCounter(calls):
            yield calls


def reads(calls: Counter) -> Counter:
    return Counter({k: v for k, v in calls.items() if k in HOST_READS or (k.startswith("aten.") and k not in LIFT_OPS)})


def data_in(calls: Counter) -> Counter:
    return Counter({k: v for k, v in calls.items() if k.startswith("torch.") or k in LIFT_OPS})


def counted_collect(monkeypatch, batch_size: int, plant=None, overrides=()) -> tuple[Counter, int]:
    """(what counting_host_reads saw during one collect of `batch_size` decisions, env steps).
    `plant(decision)` runs after every learner decision, inside the hot loop."""
    trainer = smoke_trainer(*batch_of(batch_size), *overrides)
    steps = []
    env_step = trainer.env.step

    def spy(actions):
        steps.append(1)
        return env_step(actions)

    trainer.env.step = spy
    if plant is not None:
        decide = trainer.learner.actor.decide

        def planted(*args, **kwargs):
            d = decide(*args, **kwargs)
            plant(d)
            return d

        trainer.learner.actor.decide = planted
    params = trainer.sampler.params_tensor()
    with counting_host_reads(monkeypatch) as calls:
        trainer.collect(params)
    assert trainer.learner.buffer.size == batch_size
    assert len(steps) * NUM_GAMES == batch_size, "self-play: one stored decision per game per env step"
    return calls, len(steps)


def test_counting_wrappers_catch_reads_in_the_hot_loop(monkeypatch):
    """The counters themselves: a direct .item(), a per-step float() and a per-step boolean mask
    planted in the loop are all seen, once per step."""
    original = torch.Tensor.__dict__.get("item")
    with counting_host_reads(monkeypatch) as calls:
        torch.ones(()).item()
        x = torch.arange(4)
        _ = x[x > 1]
        _ = torch.tensor([1, 2])
    assert calls["item"] == 1 and calls["aten.index"] == 1
    assert calls["torch.tensor"] == 1 and calls["aten.lift_fresh"] == 1
    torch.ones(()).item()
    assert calls["item"] == 1 and torch.Tensor.__dict__.get("item") is original, "the patches are undone"

    def plant(d):
        float(d.value[0])
        _ = d.actions[d.actions[:, 0] >= 0]

    clean, steps = counted_collect(monkeypatch, 256)
    planted, planted_steps = counted_collect(monkeypatch, 256, plant)
    assert planted_steps == steps == 256 // NUM_GAMES
    assert planted["__float__"] - clean["__float__"] == steps
    assert planted["aten.index"] - clean["aten.index"] == steps


EXPLORING = ("--train.explore-share", "0.25")  # exploration.py: per-row sampling parameters, host draws
TEMPERED = (*EXPLORING, "--train.explore-temperature", "3")  # the same parameters, temperatures not smoothing


@pytest.mark.parametrize("overrides", [(), EXPLORING, TEMPERED], ids=["policy", "exploring", "tempered"])
def test_collect_reads_nothing_back_per_env_step(monkeypatch, overrides):
    """The rollout's host reads are the same for 16 and 64 env steps (a few, at the epoch's end):
    per step the only device->host traffic is StepTransfer.download."""
    short, short_steps = counted_collect(monkeypatch, 256, overrides=overrides)
    long, long_steps = counted_collect(monkeypatch, 1024, overrides=overrides)
    assert (short_steps, long_steps) == (16, 64)
    assert reads(long) == reads(short), f"host reads grow with env steps: {reads(short)} -> {reads(long)}"
    assert sum(reads(short).values()) <= 4, f"more than the epoch-end statistics are read: {reads(short)}"
    assert not any(k.startswith("aten.") for k in reads(short)), "a data-dependent op in the rollout"


@pytest.mark.parametrize("overrides", [(), EXPLORING, TEMPERED], ids=["policy", "exploring", "tempered"])
def test_collect_makes_no_tensor_from_host_data_per_env_step(monkeypatch, overrides):
    """No tensor is built from Python/numpy data per step: StepTransfer's buffer is the one way up."""
    short, _ = counted_collect(monkeypatch, 256, overrides=overrides)
    long, _ = counted_collect(monkeypatch, 1024, overrides=overrides)
    assert data_in(long) == data_in(short), f"host data enters per step: {data_in(short)} -> {data_in(long)}"


# ---- 2. StepTransfer on the CPU ------------------------------------------------------------------
def test_step_transfer_upload_is_a_view_and_round_trips_rows_slots_starts_and_explore_flags():
    n = 6
    transfer = StepTransfer(n, RowFormat(2 * n, OBS_BYTES, ACTION_WIDTH), torch.device("cpu"))
    g = np.random.default_rng(0)
    base = g.integers(0, 256, size=(1, OBS_BYTES), dtype=np.uint8)  # compact rows, as the env writes them
    obs = np.repeat(base, 40, 0)
    rows = np.array([0, 1, 33, 38, 39, 7])
    slots = np.array([0, 2**31 - 1, 3, 2**24 + 1, 511, 2**23 + 1])  # int32: beyond float32's exact integers
    starts = np.array([True, False, False, True, True, False])
    explore = np.array([True, True, False, False, True, False])  # every pairing with starts
    up_obs, up_rows, up_slots, up_starts, up_explore = transfer.upload(obs, rows, slots, starts, explore)
    assert up_rows.dtype == up_slots.dtype == torch.int64 and up_starts.dtype == up_explore.dtype == torch.bool
    assert up_rows.tolist() == rows.tolist() and up_slots.tolist() == slots.tolist()
    assert up_starts.tolist() == starts.tolist() and up_explore.tolist() == explore.tolist()
    assert up_obs.dtype == torch.uint8 and torch.equal(up_obs, torch.from_numpy(np.repeat(base, n, 0)))
    # no copy on the CPU: the uploaded observations are the host buffer itself
    assert up_obs.data_ptr() == transfer.host.data_ptr() and up_obs.untyped_storage().data_ptr() == (
        transfer.host.untyped_storage().data_ptr()
    )
    transfer.host_obs[2, 5] = 123
    assert up_obs[2, 5].item() == 123, "a write to the host buffer is seen through the upload"

    # real observations of distinct rows land in game order
    obs = g.integers(0, 256, size=(40, OBS_BYTES), dtype=np.uint8)
    rows = np.array([39, 3, 0, 17, 8, 22])
    up_obs, up_rows, _, up_starts, up_explore = transfer.upload(obs, rows, np.arange(n), np.zeros(n, dtype=bool))
    assert torch.equal(up_obs, torch.from_numpy(obs[rows])) and up_rows.tolist() == rows.tolist()
    assert not up_starts.any() and not up_explore.any(), "no explore flags: none explore"
    # what crosses per step: the compact rows and three int32 values per game
    assert transfer.bytes_up == n * OBS_BYTES + 3 * 4 * n + (-n * OBS_BYTES) % 4


def test_step_transfer_download_returns_int32_numpy_of_the_actions():
    transfer = StepTransfer(5, RowFormat(10, OBS_BYTES, ACTION_WIDTH), torch.device("cpu"))
    g = torch.Generator().manual_seed(0)
    first = torch.randint(-1, 300, (5, ACTION_WIDTH), generator=g)  # long, as the sampler returns
    out = transfer.download(first)
    assert isinstance(out, np.ndarray) and out.dtype == np.int32 and out.shape == (5, ACTION_WIDTH)
    assert np.array_equal(out, first.numpy())
    kept = out.copy()
    second = torch.randint(-1, 300, (5, ACTION_WIDTH), generator=g)
    assert transfer.download(second) is out, "one buffer reused every step"
    assert np.array_equal(out, second.numpy()) and not np.array_equal(kept, out)


# ---- 3. compiled decision step on the CPU --------------------------------------------------------
def compiled_twice(*overrides: str) -> Trainer:
    """A compiled smoke trainer after two epochs' collects: the first compiled the decision step,
    the second compiled nothing new."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    trainer = smoke_trainer("--train.compile", "true", "--train.compile-mode", "default", *overrides, *batch_of(256))
    learner = trainer.learner.actor
    assert learner.compiled and learner.forward is not learner.step
    params = trainer.sampler.params_tensor()
    trainer.collect(params)
    graphs = counters["stats"]["unique_graphs"]
    assert graphs >= 1, "the decision step was compiled"
    trainer.collect(params)
    assert counters["stats"]["unique_graphs"] == graphs, "the second epoch's collect recompiled the step"
    return trainer


@pytest.mark.slow  # inductor C++ compile of the decision step, as below
def test_an_exploring_compiled_rollout_does_not_recompile():
    """With exploration the step takes per-row sampling parameters [n, 3] every step: one graph still."""
    assert compiled_twice(*EXPLORING).learner.buffer.explored_steps > 0


@pytest.mark.slow  # inductor C++ compile of the decision step: ~60 s cold on a 2-core box
def test_compiled_rollout_step_does_not_recompile_and_matches_eager():
    """`--train.compile true` on the CPU: a second epoch's collect compiles nothing new, and the
    compiled PolicyActor.decide picks the same actions as the eager PolicyStep on the same inputs."""
    from torch._dynamo.utils import counters

    trainer = compiled_twice()
    learner, params = trainer.learner.actor, trainer.sampler.params_tensor()
    graphs = counters["stats"]["unique_graphs"]

    # the next step's inputs, through the same StepTransfer views collect() hands the step
    rows_np = trainer.parts.deciding_rows(0)  # the first part's (every game's, without overlap)
    flags = trainer.episode_start[rows_np].copy()
    flags[::3] = True  # some rows start a game, so both state paths are compared
    slots = np.full(len(rows_np), trainer.learner.buffer.capacity)
    obs, rows, _, starts, _ = trainer.transfers[0].upload(trainer.obs, rows_np, slots, flags)
    h0 = torch.where(starts[:, None], 0.0, learner.state.h[rows])
    c0 = torch.where(starts[:, None], 0.0, learner.state.c[rows])
    assert h0.abs().sum() > 0, "carried LSTM state is part of the comparison"
    rng = trainer.learner.generator.get_state()
    d = learner.decide(obs, rows, params, episode_start=starts)
    got = [t.clone() for t in (d.actions, d.logprob, d.entropy, d.value, d.state_h, d.state_c)]
    h_next, c_next = learner.state.h[rows].clone(), learner.state.c[rows].clone()
    trainer.learner.generator.set_state(rng)
    uniforms = draw_uniforms(len(rows), trainer.learner.generator)
    actions, logprob, entropy, value, h1, c1 = learner.step(obs, h0, c0, params, uniforms)
    assert torch.equal(got[0], actions), "compiled and eager pick different actions"
    assert torch.equal(got[4], h0) and torch.equal(got[5], c0), "the decision reports the state it started from"
    for name, a, b in (("logprob", got[1], logprob), ("entropy", got[2], entropy), ("value", got[3], value)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5, msg=lambda m, n=name: f"{n}: {m}")
    torch.testing.assert_close(h_next, h1, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(c_next, c1, rtol=1e-5, atol=1e-5)
    assert counters["stats"]["unique_graphs"] == graphs, "deciding with episode starts recompiled the step"


# ---- 4. bf16 autocast of the loss ----------------------------------------------------------------
def bf16_against_fp32(*overrides: str) -> None:
    """One PPOUpdater.step in fp32 and in bf16 from the same weights, optimizer state and minibatch:
    the loss statistics agree to bf16 accuracy, the gradients point the same way, and bf16 really
    ran (the trunk's matmul produced bf16; results differ from fp32's bit pattern)."""
    trainer = smoke_trainer(*overrides, "--train.bptt-horizon", "4", *batch_of(256, 64))
    t, dev = trainer.cfg.train, trainer.device
    params = trainer.sampler.params_tensor(dev)
    trainer.collect(params)
    batch = trainer.learner.buffer.pack(t.gamma, t.gae_lambda)
    coefs = torch.tensor([0.2, 0.5, 0.2, 0.01, 0.0], device=dev)
    segments = t.minibatch_size // t.bptt_horizon

    def updater(policy, optimizer, precision: str) -> PPOUpdater:
        settings = UpdateSettings(segments, 1, t.max_grad_norm, False, None, precision)
        hidden = trainer.policy.hidden_size
        return PPOUpdater(policy, trainer.sampler, optimizer, settings, t.bptt_horizon, trainer.env.rows, hidden, dev)

    # one fp32 step first, so the PPO ratio and the Adam moments are away from their trivial start
    warm = updater(trainer.policy, trainer.learner.optimizer, "fp32")
    warm.load_minibatch(batch, torch.arange(segments, device=dev))
    warm.step(params, coefs)
    (p32, o32), (p16, o16) = (copy.deepcopy((trainer.policy, trainer.learner.optimizer)) for _ in range(2))
    u32, u16 = updater(p32, o32, "fp32"), updater(p16, o16, "bf16")
    index = torch.randperm(batch.obs.shape[0], generator=torch.Generator().manual_seed(0))[:segments].to(dev)
    dtypes = {}

    def record_dtype(name):
        def hook(module, inputs, output):
            dtypes.setdefault(name, output.dtype)

        return hook

    for name, policy in (("fp32", p32), ("bf16", p16)):
        policy.trunk[0].register_forward_hook(record_dtype(name))
    for u in (u32, u16):
        u.load_minibatch(batch, index)
    s32, s16 = u32.step(params, coefs), u16.step(params, coefs)
    assert dtypes == {"fp32": torch.float32, "bf16": torch.bfloat16}, "autocast ran the bf16 step in bf16"
    assert s16.dtype == torch.float32 and torch.isfinite(s16).all()
    assert float(s32[STAT_NAMES.index("approx_kl")]) > 0, "the step starts away from ratio 1"
    assert not torch.equal(s16, s32), "bf16 statistics are bit-identical to fp32's: autocast did nothing"
    stat = {n: (float(a), float(b)) for n, a, b in zip(STAT_NAMES, s32.cpu(), s16.cpu())}
    for name in ("policy_loss", "value_loss", "entropy"):
        assert stat[name][1] == pytest.approx(stat[name][0], rel=5e-2, abs=1e-2), f"{name}: {stat[name]}"
    for name in ("approx_kl", "clipfrac", "ratio_max_dev"):
        assert stat[name][1] == pytest.approx(stat[name][0], abs=5e-2), f"{name}: {stat[name]}"
    g32 = torch.cat([p.grad.reshape(-1) for p in p32.parameters()])
    g16 = torch.cat([p.grad.reshape(-1) for p in p16.parameters()])
    assert all(p.dtype == torch.float32 for p in p16.parameters()), "weights stay fp32"
    assert g16.dtype == torch.float32 and not torch.equal(g16, g32)
    cosine = torch.nn.functional.cosine_similarity(g16.double(), g32.double(), dim=0)
    assert cosine > 0.99, f"bf16 gradients point elsewhere: cosine {float(cosine):.4f}"


def test_bf16_step_matches_fp32_on_the_cpu():
    bf16_against_fp32()


# ---- 5. what auto means ----------------------------------------------------------------------------
def test_device_auto_and_compile_auto_resolve_for_this_machine():
    assert resolve_device("auto") == (
        torch.device("cuda", torch.cuda.current_device()) if CUDA else torch.device("cpu")
    )
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("cuda:1") == torch.device("cuda", 1)
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    cases = [
        ("auto", "reduce-overhead", cpu, None),
        ("auto", "reduce-overhead", cuda, "reduce-overhead"),
        ("auto", "default", cuda, "default"),
        ("true", "default", cpu, "default"),
        ("true", "max-autotune", cuda, "max-autotune"),
        ("false", "reduce-overhead", cpu, None),
        ("false", "reduce-overhead", cuda, None),
    ]
    for switch, mode, device, want in cases:
        cfg = load_config(SMOKE, ["--train.compile", switch, "--train.compile-mode", mode])
        assert compile_mode_for(cfg, device) == want, (switch, mode, device)
    # a trainer with device = auto and compile = auto on this machine
    trainer = smoke_trainer("--base.device", "auto", "--train.compile", "auto", *batch_of(256))
    assert trainer.device == resolve_device("auto")
    assert next(trainer.policy.parameters()).device.type == trainer.device.type
    assert trainer.learner.buffer.obs.device.type == trainer.device.type
    if not CUDA:
        assert not trainer.learner.actor.compiled and not trainer.learner.updater.compiled, (
            "auto does not compile on the CPU"
        )
        assert trainer.transfers[0].up is trainer.transfers[0].host, "no device copy on the CPU"
        assert trainer.parts.count == 1, "overlap = auto is off on the CPU"
    else:
        assert trainer.parts.count == 2, "overlap = auto is on for CUDA"


def test_a_cuda_device_always_carries_its_index(monkeypatch):
    """torch.cuda.set_device refuses a bare `cuda` (build_trainer calls it), so
    `cuda` resolves to the current GPU, and under torchrun to the rank's own."""
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 3)
    assert resolve_device("cuda") == torch.device("cuda", 3)
    assert resolve_device("cuda", local_rank=1) == torch.device("cuda", 1)
    assert resolve_device("cuda:2") == torch.device("cuda", 2)


# ---- 6. episode starts zero the LSTM state -------------------------------------------------------
def test_episode_start_decides_from_a_zero_state_and_other_rows_keep_theirs():
    trainer = smoke_trainer(*batch_of(256))
    obs_np = trainer.env.reset(trainer.cfg.base.seed)
    rows_np = np.flatnonzero(trainer.env.masks)
    num_rows = trainer.env.num_rows
    actor = PolicyActor(trainer.policy, trainer.sampler, num_rows, torch.Generator().manual_seed(0))
    g = torch.Generator().manual_seed(1)
    actor.state.h.copy_(torch.randn(num_rows, actor.policy.hidden_size, generator=g))
    actor.state.c.copy_(torch.randn(num_rows, actor.policy.hidden_size, generator=g))
    stored_h, stored_c = actor.state.h.clone(), actor.state.c.clone()
    rows = torch.from_numpy(rows_np)
    obs = torch.from_numpy(obs_np[rows_np])
    flag = torch.arange(len(rows)) % 3 == 0
    assert flag.any() and (~flag).any()

    d = actor.decide(obs, rows, episode_start=flag)
    assert torch.count_nonzero(d.state_h[flag]) == 0 and torch.count_nonzero(d.state_c[flag]) == 0
    assert torch.equal(d.state_h[~flag], stored_h[rows[~flag]])
    assert torch.equal(d.state_c[~flag], stored_c[rows[~flag]])
    # the rows' next state is a step from exactly that state
    params, uniforms = actor.default_params, draw_uniforms(len(rows), torch.Generator().manual_seed(2))
    zero_h = torch.where(flag[:, None], 0.0, stored_h[rows])
    zero_c = torch.where(flag[:, None], 0.0, stored_c[rows])
    *_, h1, c1 = actor.step(obs, zero_h, zero_c, params, uniforms)
    assert torch.equal(actor.state.h[rows], h1) and torch.equal(actor.state.c[rows], c1)
    # without the flag those rows would have continued from their stored state: the flag mattered
    *_, h_kept, _ = actor.step(obs, stored_h[rows], stored_c[rows], params, uniforms)
    assert not torch.allclose(h_kept[flag], h1[flag])
    assert torch.equal(h_kept[~flag], h1[~flag])
    # rows that did not decide are untouched
    others = torch.from_numpy(np.setdiff1d(np.arange(num_rows), rows_np))
    assert len(others) and torch.equal(actor.state.h[others], stored_h[others])
    assert torch.equal(actor.state.c[others], stored_c[others])


# ---- 7. CUDA ------------------------------------------------------------------------------------
def sync_checked(fn, armed: dict):
    """`fn` run under torch.cuda.set_sync_debug_mode("error") while armed["on"]: a synchronising
    CUDA call inside it raises RuntimeError. Without CUDA the calls are only counted (the CPU
    test below runs the same arming, so a renamed hot-loop method fails here too)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not armed["on"]:
            return fn(*args, **kwargs)
        armed["calls"] += 1
        if not CUDA:
            return fn(*args, **kwargs)
        torch.cuda.set_sync_debug_mode("error")
        try:
            return fn(*args, **kwargs)
        finally:
            torch.cuda.set_sync_debug_mode("default")

    return wrapper


def arm_hot_loop(trainer: Trainer, monkeypatch) -> dict:
    """The rollout's per-step device work, learner.decide and buffer.store, runs sync-checked when
    armed. (StepTransfer's non_blocking copies and its event wait are the step's one intended sync,
    so they stay outside.)"""
    armed = {"on": False, "calls": 0}
    monkeypatch.setattr(trainer.learner.actor, "decide", sync_checked(trainer.learner.actor.decide, armed))
    monkeypatch.setattr(trainer.learner.buffer, "store", sync_checked(trainer.learner.buffer.store, armed))
    return armed


def test_the_hot_loop_the_gpu_tests_arm_is_the_rollouts_own(monkeypatch):
    """On the CPU: the methods the GPU tests check for syncs (the learner's decide, with the
    frozen pool as its companion, and the buffer's store) are the ones a league rollout calls."""
    from tcgleague.bench.league import fill_pool

    trainer = smoke_trainer("--league.enable", "true", "--league.activate-after-steps", "0", *batch_of(256))
    fill_pool(trainer, 2)
    armed = arm_hot_loop(trainer, monkeypatch)
    armed["on"] = True
    trainer.collect(trainer.sampler.params_tensor(trainer.device))
    assert armed["calls"] >= 2 * 256 // NUM_GAMES and trainer.opponents.pool.forwards > 0


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs CUDA (torch sees no GPU here)")
def test_cuda_eager_rollout_hot_loop_never_syncs(monkeypatch):
    trainer = smoke_trainer("--base.device", "cuda", "--train.compile", "false", *batch_of(256))
    params = trainer.sampler.params_tensor(trainer.device)
    armed = arm_hot_loop(trainer, monkeypatch)
    trainer.collect(params)  # warm-up: lazy cuBLAS/cuRAND/allocator initialisation may sync once
    torch.cuda.synchronize()
    armed["on"] = True
    trainer.collect(params)
    assert armed["calls"] == 2 * 256 // NUM_GAMES, "decide and store ran sync-checked every step"


def count_recordings(monkeypatch) -> Counter:
    """A fresh dynamo, and a counter of CUDA-graph recordings (["graphs"]): counted at
    CUDAGraphTreeManager.record_function, the single place in torch/_inductor/cudagraph_trees.py
    that creates a CUDAGraphNode (a captured graph): warm-up runs and replays (execute_node) do
    not pass through it, every (re-)recording does. The inductor counters have no plain
    "recorded" count."""
    from torch._dynamo.utils import counters
    from torch._inductor import cudagraph_trees

    torch._dynamo.reset()
    counters.clear()
    recorded = Counter()
    record = cudagraph_trees.CUDAGraphTreeManager.record_function

    def counting(self, *args, **kwargs):
        recorded["graphs"] += 1
        return record(self, *args, **kwargs)

    monkeypatch.setattr(cudagraph_trees.CUDAGraphTreeManager, "record_function", counting)
    return recorded


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs CUDA (torch sees no GPU here)")
def test_cuda_compiled_epochs_record_cuda_graphs_once_and_never_sync(monkeypatch):
    """reduce-overhead on CUDA: the decision step and the loss become CUDA graphs in the first
    epoch; the second epoch replays them (no new recording), and the replayed hot loop never syncs."""
    from torch._dynamo.utils import counters

    recorded = count_recordings(monkeypatch)
    trainer = smoke_trainer(
        "--base.device", "cuda", "--train.compile", "true", "--train.compile-mode", "reduce-overhead",
        "--train.update-epochs", "2",
    )  # fmt: skip
    assert trainer.learner.actor.compiled and trainer.learner.updater.compiled
    first = trainer.train_epoch()
    after_first = recorded["graphs"]
    assert after_first >= 2, "the decision step and the loss were recorded as CUDA graphs"
    assert counters["inductor"]["cudagraph_skips"] == 0, "inductor skipped CUDA graphs"
    graphs = counters["stats"]["unique_graphs"]
    second = trainer.train_epoch()
    assert recorded["graphs"] == after_first, "the second epoch re-recorded CUDA graphs"
    assert counters["stats"]["unique_graphs"] == graphs, "the second epoch recompiled"
    assert np.isfinite(first["losses/value_loss"]) and np.isfinite(second["losses/value_loss"])

    armed = arm_hot_loop(trainer, monkeypatch)
    armed["on"] = True
    trainer.collect(trainer.sampler.params_tensor(trainer.device))
    assert armed["calls"] == 2 * trainer.cfg.train.batch_size // NUM_GAMES
    assert recorded["graphs"] == after_first


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs CUDA (torch sees no GPU here)")
def test_cuda_compiled_league_decides_for_the_pool_in_the_learners_graph(monkeypatch):
    """The frozen members decide inside the learner's compiled step (actors.JointStep: one graph
    for both, fixed shapes: opponent_batch 8 fixes the bucket at once, more rows take eager extra
    rounds): after the warm-up epoch no recording and no recompile, and the hot loop (the pool's
    grid upload, draws and state write-back included) never syncs. CPU twin:
    test_frozen_pool.py (the same JointStep compiled with inductor, eager equality)."""
    from torch._dynamo.utils import counters

    from tcgleague.bench.league import fill_pool

    recorded = count_recordings(monkeypatch)
    trainer = smoke_trainer(
        "--base.device", "cuda", "--train.compile", "true", "--train.compile-mode", "reduce-overhead",
        "--league.enable", "true", "--league.activate-after-steps", "0", "--league.opponent-batch", "8",
        "--league.checkpoint-add-interval", "1000000", "--league.latest-ratio", "0.3",
    )  # fmt: skip
    fill_pool(trainer, 3)
    trainer.train_epoch()
    after_first, graphs = recorded["graphs"], counters["stats"]["unique_graphs"]
    forwards = trainer.opponents.pool.forwards
    trainer.train_epoch()
    assert trainer.opponents.pool.forwards > forwards, "the pool decided in the second epoch"
    assert recorded["graphs"] == after_first, "the second epoch re-recorded CUDA graphs"
    assert counters["stats"]["unique_graphs"] == graphs, "the second epoch recompiled"
    armed = arm_hot_loop(trainer, monkeypatch)
    armed["on"] = True
    trainer.collect(trainer.sampler.params_tensor(trainer.device))
    assert armed["calls"] > 0 and recorded["graphs"] == after_first


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs CUDA (torch sees no GPU here)")
def test_bf16_step_matches_fp32_on_cuda():
    bf16_against_fp32("--base.device", "cuda", "--train.compile", "false")
