import pytest

from tcgleague.anneal import LinearAnneal, anneal_values, anneals_from_config
from tcgleague.config import load_config


def test_linear_start_middle_end():
    a = LinearAnneal(initial=1.2, final=1.0)
    total = 46080
    assert a.value(0, total) == pytest.approx(1.2)
    assert a.value(23040, total) == pytest.approx(1.1)
    assert a.value(total, total) == pytest.approx(1.0)
    assert a.value(total * 3, total) == pytest.approx(1.0)
    assert a.value(11520, total) == pytest.approx(1.15)


def test_before_start_and_after_end_with_fracs():
    a = LinearAnneal(initial=0.05, final=0.0, start_frac=0.25, end_frac=0.75)
    total = 1000
    assert a.value(0, total) == 0.05
    assert a.value(250, total) == 0.05
    assert a.value(500, total) == pytest.approx(0.025)
    assert a.value(750, total) == 0.0
    assert a.value(999, total) == 0.0


def test_absolute_steps_override_fracs():
    # start_step overrides start_frac, end_frac still used for the end.
    a = LinearAnneal(initial=1.0, final=0.0, start_frac=0.5, end_frac=1.0, start_step=0)
    assert a.value(500, 1000) == pytest.approx(0.5)  # with start_frac it would be 1.0
    # end_step overrides end_frac.
    b = LinearAnneal(initial=1.0, final=0.0, start_frac=0.0, end_frac=1.0, end_step=100)
    assert b.value(50, 1000) == pytest.approx(0.5)
    assert b.value(100, 1000) == 0.0
    # Both absolute: total_timesteps no longer matters.
    c = LinearAnneal(initial=2.0, final=4.0, start_step=100, end_step=300)
    for total in (10, 1000, 10**9):
        assert c.value(200, total) == pytest.approx(3.0)
        assert c.value(50, total) == 2.0
        assert c.value(400, total) == 4.0


def test_step_offset():
    a = LinearAnneal(initial=0.01, final=0.0)
    total = 256
    assert a.value(0, total, step_offset=128) == pytest.approx(0.005)
    assert a.value(128, total, step_offset=128) == 0.0
    assert a.value(64, total, step_offset=64) == a.value(128, total)


def test_step_change_when_start_equals_end():
    a = LinearAnneal(initial=1.0, final=0.5, start_step=100, end_step=100)
    assert a.value(99, 1000) == 1.0
    assert a.value(100, 1000) == 0.5
    assert a.value(101, 1000) == 0.5
    b = LinearAnneal(initial=1.0, final=0.5, start_frac=0.5, end_frac=0.5)
    assert b.value(499, 1000) == 1.0 and b.value(500, 1000) == 0.5


def test_end_before_start_is_an_error():
    a = LinearAnneal(initial=1.0, final=0.0, start_step=500, end_frac=0.1)
    with pytest.raises(ValueError):
        a.value(0, 1000)


def test_from_config_and_values():
    cfg = load_config(
        None,
        [
            "--train.total_timesteps=1000",
            "--policy.subaction_temperature_initial=1.2",
            "--policy.subaction_temperature_final=1.0",
            "--policy.smoothing_eps_initial=0.05",
            "--policy.smoothing_eps_final=0.0",
            "--policy.smoothing_eps_anneal_end_step=500",
            "--train.ent_coef_initial=0.01",
            "--train.ent_coef_final=0.0",
            "--train.ent_coef_anneal_start_frac=0.5",
            "--train.magnet_coef_initial=0.2",
            "--train.magnet_coef_final=0.1",
            "--train.lr_scale_final=0.5",
        ],
    )
    anneals = anneals_from_config(cfg)
    assert set(anneals) == {"subaction_temperature", "smoothing_eps", "ent_coef", "magnet_coef", "lr_scale"}
    assert anneals["smoothing_eps"].end_step == 500
    vals = anneal_values(anneals, 250, cfg.train.total_timesteps, 0)
    assert set(vals) == {
        "sampler/subaction_temperature",
        "sampler/smoothing_eps",
        "anneal/ent_coef",
        "anneal/magnet_coef",
        "anneal/lr_scale",
    }
    assert vals["sampler/subaction_temperature"] == pytest.approx(1.15)
    assert vals["sampler/smoothing_eps"] == pytest.approx(0.025)
    assert vals["anneal/ent_coef"] == pytest.approx(0.01)
    assert vals["anneal/magnet_coef"] == pytest.approx(0.175)
    assert vals["anneal/lr_scale"] == pytest.approx(0.875)
    vals = anneal_values(anneals, 500, 1000, 250)
    assert vals["anneal/ent_coef"] == pytest.approx(0.005)
    assert vals["sampler/smoothing_eps"] == 0.0
    assert all(isinstance(v, float) for v in vals.values())
