"""The rollout buffer: rewards reach the decision that earned them, GAE stops at terminals,
bootstraps truncated (turn cap) steps from their own value and an epoch's pending steps from
their exact next value (or leaves them out of the loss without one), packing restarts the
recurrence at rows, episodes and segments, stores never write the spare slot's data to a stored
slot, and the discounted sums and packed GAE equal a plain float64 reference loop, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tcgleague.rollout import RolloutBuffer, discounted_sums, row_runs
from tcgleague.rows import RowFormat

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def make_buffer(capacity: int, horizon: int, num_rows: int = 4) -> RolloutBuffer:
    buf = RolloutBuffer(capacity, horizon, RowFormat(num_rows, 3, 4), hidden_size=2, device=torch.device("cpu"))
    buf.start_epoch()
    return buf


def add(buf: RolloutBuffer, rows, values, starts=None) -> None:
    """Stores one decision per row the way the trainer does: slots on the host, data by slot."""
    n = len(rows)
    z = torch.zeros
    slots = buf.reserve(np.array(rows), np.zeros(n, dtype=bool) if starts is None else np.array(starts))
    buf.store(
        torch.from_numpy(slots),
        z(n, 3),
        z(n, 4, dtype=torch.long),
        z(n),
        torch.tensor(values, dtype=torch.float32),
        z(n, 2),
        z(n, 2),
    )


def credit(buf: RolloutBuffer, rows, rewards, terminals=None, truncations=None) -> None:
    n = len(rows)
    buf.credit(
        np.array(rows),
        np.array(rewards, dtype=np.float32),
        np.zeros(n, dtype=bool) if terminals is None else np.array(terminals),
        np.zeros(n, dtype=bool) if truncations is None else np.array(truncations),
    )


def test_rewards_are_credited_to_the_previous_decision():
    buf = make_buffer(capacity=4, horizon=2)
    add(buf, [0, 3], [0.5, 0.1])
    credit(buf, [0, 1], [0.25, 9.0])  # row 1 never decided: ignored
    add(buf, [0], [0.7])
    credit(buf, [0, 3], [1.0, -1.0], terminals=[True, True])
    add(buf, [2], [0.3])
    assert buf.reward[:4].tolist() == [0.25, -1.0, 1.0, 0.0]
    assert buf.has_next[:4].tolist() == [True, False, False, False]
    assert buf.next_index[0] == 2, "row 0's first step bootstraps from its next stored step"
    batch = buf.pack(gamma=0.9, lam=0.5)
    # packed by row: row 0 (two steps), row 2, row 3
    assert batch.rows.reshape(-1).tolist() == [0, 0, 2, 3]
    adv = batch.advantage.reshape(-1).tolist()
    d0 = 0.25 + 0.9 * 0.7 - 0.5
    d1 = 1.0 - 0.7  # terminal: no bootstrap
    assert adv[1] == pytest.approx(d1)
    assert adv[0] == pytest.approx(d0 + 0.9 * 0.5 * d1)
    assert adv[2] == 0.0  # pending at epoch end with no next value: out of the loss
    assert adv[3] == pytest.approx(-1.0 - 0.1)
    assert batch.mask.reshape(-1).tolist() == [1.0, 1.0, 0.0, 1.0]
    assert batch.boundary.reshape(-1).tolist() == [1.0, 0.0, 1.0, 1.0]


@pytest.mark.parametrize("ended", ["terminals", "truncations"])
def test_a_reward_after_a_rows_game_ended_belongs_to_no_stored_step(ended):
    """With reward shaping, a row whose opponent opens the next game is paid the opponent's first
    turn's potential change at its own first decision there, before it has stored anything in
    that game: it must not land on the ended game's last step."""
    buf = make_buffer(capacity=4, horizon=2, num_rows=2)
    add(buf, [0, 1], [0.5, 0.2], starts=[True, True])
    done = [True, False]
    credit(buf, [0, 1], [1.0, 0.0], **{ended: done})
    credit(buf, [0, 1], [-0.15, 0.25])  # row 0: the new game's shaping; row 1: still in its game
    assert buf.reward[:2].tolist() == [1.0, 0.25]
    add(buf, [0], [0.3], starts=[True])
    credit(buf, [0], [0.05])
    assert buf.reward[:3].tolist() == pytest.approx([1.0, 0.25, 0.05]), "the new game's own step is credited again"


def two_games(row0_truncated: bool):
    """Row 0's game ends at the turn cap (or, for comparison, decided) with reward 0.05 while row 1's
    game ends decided (+1); both rows then start new games whose first decisions are pending at the
    epoch's end. Steps in arrival order: 0 (row 0), 1 (row 1), 2 (row 0), 3 (row 1), 4 (row 0), 5 (row 1)."""
    buf = make_buffer(capacity=6, horizon=2, num_rows=2)
    add(buf, [0, 1], [0.5, 0.2], starts=[True, True])
    credit(buf, [0], [0.1])
    add(buf, [0, 1], [0.6, 0.3])
    credit(buf, [0, 1], [0.05, 1.0], terminals=[not row0_truncated, True], truncations=[row0_truncated, False])
    add(buf, [0, 1], [0.9, 0.4], starts=[True, True])  # new games: their values must not leak back
    return buf


@pytest.mark.parametrize("lam", [0.8, 1.0])
def test_gae_bootstraps_truncated_steps_from_their_own_value_and_terminals_from_zero(lam):
    gamma = 0.9
    buf = two_games(row0_truncated=True)
    assert buf.truncated[:6].tolist() == [False, False, True, False, False, False]
    assert buf.terminal[:6].tolist() == [False, False, False, True, False, False]
    assert buf.has_next[:6].tolist() == [True, True, False, False, False, False], (
        "a game's last step is never linked to the next game's first"
    )
    batch = buf.pack(gamma, lam)
    assert batch.rows.reshape(-1).tolist() == [0, 0, 0, 1, 1, 1]
    adv = dict(zip([0, 2, 4, 1, 3, 5], batch.advantage.reshape(-1).tolist()))
    ret = dict(zip([0, 2, 4, 1, 3, 5], batch.ret.reshape(-1).tolist()))
    value = {0: 0.5, 1: 0.2, 2: 0.6, 3: 0.3, 4: 0.9, 5: 0.4}
    # by hand: delta_t = r_t + gamma * V_next - V_t, A_t = delta_t + gamma * lam * A_next within a game
    want = {
        2: 0.05 + gamma * 0.6 - 0.6,  # truncated at the turn cap: bootstraps its OWN value (0.6)
        3: 1.0 + gamma * 0.0 - 0.3,  # terminal: no bootstrap
        4: 0.0,  # pending at the epoch's end, no next value given: masked
        5: 0.0,
    }
    want[0] = (0.1 + gamma * 0.6 - 0.5) + gamma * lam * want[2]
    want[1] = (0.0 + gamma * 0.3 - 0.2) + gamma * lam * want[3]
    for k in range(6):
        assert adv[k] == pytest.approx(want[k], abs=1e-6), k
        assert ret[k] == pytest.approx(want[k] + value[k], abs=1e-6), k
    assert batch.mask.reshape(-1).tolist() == [1.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    # not 0 (a terminal's bootstrap), not the next game's first value (0.9)
    assert adv[2] != pytest.approx(0.05 - 0.6) and adv[2] != pytest.approx(0.05 + gamma * 0.9 - 0.6)
    # segments [0 2] [4 1] [3 5]: the recurrence restarts at a row, an episode and a segment start
    assert batch.boundary.reshape(-1).tolist() == [1.0, 0.0, 1.0, 1.0, 1.0, 1.0]


def test_the_same_game_decided_instead_of_truncated_does_not_bootstrap():
    gamma, lam = 0.9, 0.8
    truncated = two_games(row0_truncated=True).pack(gamma, lam).advantage.reshape(-1)
    decided = two_games(row0_truncated=False).pack(gamma, lam).advantage.reshape(-1)
    # packed positions: 0 -> step 0, 1 -> step 2 (row 0's last step of its first game)
    assert decided[1].item() == pytest.approx(0.05 - 0.6)
    assert truncated[1].item() == pytest.approx(0.05 + gamma * 0.6 - 0.6)
    assert decided[0].item() == pytest.approx((0.1 + gamma * 0.6 - 0.5) + gamma * lam * (0.05 - 0.6))
    assert torch.equal(truncated[2:], decided[2:]), "row 1 and row 0's next game are unaffected"


def test_pending_steps_bootstrap_from_the_exact_next_value_or_leave_the_loss():
    """Row 0's pending step gets the value of the decision after it (given by the trainer);
    row 1's has none (its row waits for the opponent): it is masked and its predecessor's GAE
    stops at it; row 2 has no pending step (its game ended), so a value for it is ignored."""
    gamma, lam = 0.9, 0.8
    buf = make_buffer(capacity=6, horizon=2, num_rows=3)
    add(buf, [0, 1, 2], [0.5, 0.2, 0.1])
    credit(buf, [0, 1, 2], [0.1, 0.2, 1.0], terminals=[False, False, True])
    add(buf, [0, 1], [0.6, 0.3])
    credit(buf, [0, 1], [0.05, 0.07])
    add(buf, [2], [0.4], starts=[True])
    credit(buf, [2], [-1.0], terminals=[True])
    assert buf.pending(np.array([0, 1, 2])).tolist() == [3, 4, 6], "6 = the spare slot: no pending step"
    buf.bootstrap(np.array([0, 2]), torch.tensor([0.7, 123.0]))
    batch = buf.pack(gamma, lam)
    assert batch.rows.reshape(-1).tolist() == [0, 0, 1, 1, 2, 2]
    adv = batch.advantage.reshape(-1).tolist()
    assert adv[1] == pytest.approx(0.05 + gamma * 0.7 - 0.6), "row 0: the given next value"
    assert adv[0] == pytest.approx((0.1 + gamma * 0.6 - 0.5) + gamma * lam * adv[1])
    assert adv[3] == 0.0 and adv[2] == pytest.approx(0.2 + gamma * 0.3 - 0.2), "row 1: GAE stops at the masked step"
    assert adv[4] == pytest.approx(1.0 - 0.1) and adv[5] == pytest.approx(-1.0 - 0.4), "row 2: terminals"
    assert batch.mask.reshape(-1).tolist() == [1.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    assert batch.ret.reshape(-1)[1].item() == pytest.approx(0.05 + gamma * 0.7)


def test_pack_refuses_a_partial_buffer_and_add_refuses_overflow():
    buf = make_buffer(capacity=4, horizon=2)
    add(buf, [0, 1, 2], [0.0, 0.0, 0.0])
    with pytest.raises(RuntimeError, match="full buffer"):
        buf.pack(0.9, 0.9)
    with pytest.raises(RuntimeError, match="overflow"):
        add(buf, [0, 3], [0.0, 0.0])
    with pytest.raises(ValueError, match="multiple of bptt_horizon"):
        RolloutBuffer(6, 4, RowFormat(2, 3, 4), hidden_size=2, device=torch.device("cpu"))


# ---- the spare slot, GAE against a float64 reference -------------------------------------------
def test_store_writes_stored_slots_exactly_and_the_spare_slot_nowhere():
    capacity, hidden = 8, 2
    buf = RolloutBuffer(capacity, 4, RowFormat(6, 3, 4), hidden_size=hidden, device=torch.device("cpu"))
    buf.start_epoch()
    g = torch.Generator().manual_seed(0)
    for rows in ([0, 2, 4], [1, 3]):
        reserved = buf.reserve(np.array(rows), np.zeros(len(rows), dtype=bool))
        # one decision per game: the unstored ones (slot `capacity`) are interleaved
        slots = torch.full((2 * len(rows),), capacity)
        slots[::2] = torch.from_numpy(reserved)
        n = len(slots)
        spare = slots == capacity
        data = {
            "obs": torch.randint(0, 200, (n, 3), generator=g, dtype=torch.uint8),  # compact rows
            "actions": torch.randint(0, 50, (n, 4), generator=g),
            "logprob": torch.randn(n, generator=g),
            "value": torch.randn(n, generator=g),
            "state_h": torch.randn(n, hidden, generator=g),
            "state_c": torch.randn(n, hidden, generator=g),
        }
        data["obs"][spare] = 255  # marks what must never reach a stored slot
        data["actions"][spare] = -7
        for k in ("logprob", "value", "state_h", "state_c"):
            data[k][spare] = -1e6
        buf.store(slots, **data)
        for name, src in data.items():
            dst = getattr(buf, name)
            assert dst.dtype == {"actions": torch.long, "obs": torch.uint8}.get(name, torch.float32)
            assert torch.equal(dst[slots[~spare]], src[~spare]), f"{name}: stored slots get exactly the values"
            assert torch.equal(dst[capacity], src[spare][-1]) or torch.equal(dst[capacity], src[spare][0])
    for name in ("obs", "actions", "logprob", "value", "state_h", "state_c"):
        stored = getattr(buf, name)[:capacity]
        marks = (stored == 255) if name == "obs" else (stored == -7) | (stored == -1e6)
        assert not marks.any(), f"{name}: spare data leaked"
        assert not getattr(buf, name)[5:capacity].any(), f"{name}: unreserved slots stay empty"


def reference_sums(delta: np.ndarray, cont: np.ndarray, runs: list[list[int]]) -> np.ndarray:
    """A[p] = delta[p] + cont[p] * A[next p] along each run, a float64 running sum, then float32."""
    out = np.zeros(len(delta), dtype=np.float64)
    for run in runs:
        running = 0.0
        for p in reversed(run):
            running = float(delta[p]) + float(cont[p]) * running
            out[p] = running
    return out.astype(np.float32)


def test_discounted_sums_match_a_float64_reference_loop_bit_for_bit():
    g = np.random.default_rng(3)
    lengths = [1, 9, 4, 37, 2, 16]
    rows = np.repeat(np.arange(len(lengths)) * 3, lengths)  # sorted row ids, runs of different lengths
    n = len(rows)
    delta = (g.normal(size=n) * 10).astype(np.float32)
    cont = np.where(g.random(n) < 0.2, 0.0, g.uniform(0.8, 1.0, n)).astype(np.float32)
    grid = row_runs(rows)
    assert grid.shape == (len(lengths), max(lengths))
    runs = [[p for p in line if p >= 0] for line in grid.tolist()]
    assert [len(r) for r in runs] == lengths
    got = discounted_sums(torch.from_numpy(delta), torch.from_numpy(cont), grid)
    want = torch.from_numpy(reference_sums(delta, cont, runs))
    assert got.dtype == torch.float32 and torch.equal(got, want)
    # and the sums do reach across a run (not just delta)
    assert not torch.equal(got, torch.from_numpy(delta))


def test_packed_gae_matches_a_plain_reference_loop_bit_for_bit():
    """Random decisions of 5 rows with rewards, terminals and truncations: pack()'s advantages and
    returns equal a step-by-step reference (float32 deltas as rollout.py forms them, a float64
    running sum per row, rounded to float32)."""
    g = np.random.default_rng(11)
    capacity, horizon, num_rows, gamma, lam = 64, 4, 5, 0.97, 0.9
    buf = RolloutBuffer(capacity, horizon, RowFormat(num_rows, 3, 4), hidden_size=2, device=torch.device("cpu"))
    buf.start_epoch()
    values = g.normal(size=capacity).astype(np.float32)
    steps: list[dict] = []  # arrival order = slot order
    last: dict[int, int] = {}
    new_episode = np.ones(num_rows, dtype=bool)
    while buf.size < capacity:
        k = int(min(capacity - buf.size, g.integers(1, num_rows + 1)))
        rows = g.choice(num_rows, size=k, replace=False)
        slots = buf.reserve(rows, new_episode[rows])
        z = torch.zeros
        buf.store(
            torch.from_numpy(slots),
            z(k, 3),
            z(k, 4, dtype=torch.long),
            z(k),
            torch.from_numpy(values[slots]),
            z(k, 2),
            z(k, 2),
        )
        for r, s in zip(rows.tolist(), slots.tolist()):
            if r in last and not (steps[last[r]]["terminal"] or steps[last[r]]["truncated"]):
                steps[last[r]]["next"] = s
            steps.append({"row": r, "reward": np.float32(0), "terminal": False, "truncated": False, "next": None})
            last[r] = s
        new_episode[rows] = False
        ev = g.choice(num_rows, size=int(g.integers(0, num_rows + 1)), replace=False)
        rewards = (g.normal(size=len(ev)) * (g.random(len(ev)) < 0.7)).astype(np.float32)
        terminal = g.random(len(ev)) < 0.15
        truncated = ~terminal & (g.random(len(ev)) < 0.1)
        buf.credit(ev, rewards, terminal, truncated)
        for r, rew, te, tr in zip(ev.tolist(), rewards, terminal, truncated):
            if r in last and not (steps[last[r]]["terminal"] or steps[last[r]]["truncated"]):  # after: no step's
                s = steps[last[r]]
                s["reward"] = np.float32(s["reward"] + rew)
                s["terminal"] |= bool(te)
                s["truncated"] |= bool(tr)
        new_episode[ev[terminal | truncated]] = True
    # the data exercise every case: terminals, truncations, links, and rows of different lengths
    assert any(s["terminal"] for s in steps) and any(s["truncated"] for s in steps)
    assert sum(s["next"] is not None for s in steps) > capacity // 2
    assert len({sum(s["row"] == r for s in steps) for r in range(num_rows)}) > 2

    # the trainer gives rows 0 and 3 the exact next value of their pending step (if they have one)
    boot_rows, boot_values = np.array([0, 3]), np.array([0.25, -0.75], dtype=np.float32)
    buf.bootstrap(boot_rows, torch.from_numpy(boot_values))
    for r, v in zip(boot_rows.tolist(), boot_values):
        if r in last and steps[last[r]]["next"] is None:
            steps[last[r]]["boot"] = v

    g32, l32 = np.float32(gamma), np.float32(lam)
    delta = np.zeros(capacity, dtype=np.float32)
    cont = np.zeros(capacity, dtype=np.float32)
    mask = np.ones(capacity, dtype=np.float32)
    for i, s in enumerate(steps):
        v = values[i]
        done = s["terminal"] or s["truncated"]
        next_v = np.float32(0) if s["terminal"] else values[s["next"]] if s["next"] is not None else v
        if s["next"] is None and not done:  # pending at the epoch's end
            next_v = s.get("boot")
        if next_v is None:  # pending with no next value: out of the loss, delta 0
            mask[i] = 0.0
        else:
            delta[i] = (s["reward"] + g32 * next_v) - v
        linked = s["next"] is not None and not (s["terminal"] or s["truncated"])
        cont[i] = np.float32(linked) * g32 * l32
    order = sorted(range(capacity), key=lambda i: (steps[i]["row"], i))  # packed: by row, then arrival
    position = {i: p for p, i in enumerate(order)}
    runs = [[position[i] for i in order if steps[i]["row"] == r] for r in range(num_rows)]
    adv = reference_sums(delta[order], cont[order], [r for r in runs if r])
    ret = adv + values[order]

    batch = buf.pack(gamma, lam)
    assert batch.rows.reshape(-1).tolist() == [steps[i]["row"] for i in order]
    assert torch.equal(batch.advantage.reshape(-1), torch.from_numpy(adv))
    assert torch.equal(batch.ret.reshape(-1), torch.from_numpy(ret))
    assert torch.equal(batch.mask.reshape(-1), torch.from_numpy(mask[order]))
    assert 0 < mask.sum() < capacity and any("boot" in s for s in steps)
