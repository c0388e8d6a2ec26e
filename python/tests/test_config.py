import dataclasses
import typing
from pathlib import Path

import pytest
import torch

from tcgleague.config import (
    SECTIONS,
    Config,
    ConfigError,
    TrainSection,
    config_from_dict,
    load_config,
    parse_overrides,
)

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"


def write_ini(tmp_path, text: str) -> Path:
    p = tmp_path / "c.ini"
    p.write_text(text)
    return p


def test_defaults_load():
    cfg = load_config(None, [])
    assert isinstance(cfg, Config)
    assert cfg.train.batch_size == 16384 and cfg.train.minibatch_size == 1024 and cfg.train.update_epochs == 2
    assert cfg.to_dict() == load_config(CONFIGS / "default.ini", []).to_dict(), "configs/default.ini is the defaults"
    assert cfg.train.compile == "auto" and cfg.train.norm_adv is True and cfg.train.precision == "fp32"
    assert cfg.train.compile_mode == "reduce-overhead"
    assert cfg.policy.subaction_temperature_anneal_start_step is None
    assert cfg.base.device == "auto" and cfg.vec.backend == "native"
    assert cfg.league.enable is False and cfg.wandb.mode == "auto"
    d = cfg.to_dict()
    assert set(d) == set(SECTIONS) == {"base", "env", "vec", "policy", "train", "league", "dist", "wandb"}
    assert d["train"]["learning_rate"] == 1.2e-3


def test_default_ini_loads_and_names_every_section():
    cfg = load_config(CONFIGS / "default.ini", [])
    text = (CONFIGS / "default.ini").read_text()
    for section in SECTIONS:
        assert f"[{section}]" in text
    assert cfg.train.checkpoint_interval_unit == "epochs"


def test_gpu_ini_is_default_ini_sized_for_one_gpu():
    # device = cuda is refused where torch sees no GPU, so it is overridden here
    gpu = load_config(CONFIGS / "gpu.ini", ["--base.device", "auto"])
    default = load_config(CONFIGS / "default.ini", [])
    changed = {
        (section, key)
        for section in SECTIONS
        for key, value in vars(getattr(gpu, section)).items()
        if getattr(getattr(default, section), key) != value
    }
    assert changed == {
        ("env", "num_games"),
        ("env", "num_threads"),
        ("train", "total_timesteps"),
        ("train", "batch_size"),
        ("train", "minibatch_size"),
        ("train", "checkpoint_interval"),
        ("train", "eval_interval"),
    }
    assert gpu.train.batch_size % gpu.env.num_games == 0, "whole env steps per epoch"
    assert gpu.env.num_games > default.env.num_games and gpu.train.batch_size > default.train.batch_size
    assert "device = cuda" in (CONFIGS / "gpu.ini").read_text()


def test_smoke_ini_loads():
    cfg = load_config(CONFIGS / "smoke.ini", [])
    assert cfg.env.num_games == 16
    assert (cfg.train.batch_size, cfg.train.minibatch_size, cfg.train.bptt_horizon) == (512, 256, 16)
    assert cfg.train.total_timesteps == 2048
    assert cfg.policy.hidden_size == 32
    assert (cfg.train.eval_games, cfg.train.eval_interval, cfg.train.checkpoint_interval) == (32, 2, 2)
    assert cfg.train.dashboard is False


def test_file_values_and_overrides_take_precedence(tmp_path):
    p = write_ini(tmp_path, "[train]\nlearning_rate = 1e-2\nupdate-epochs = 3  # comment\n")
    cfg = load_config(p, ["--train.learning-rate", "1e-3"])
    assert cfg.train.learning_rate == pytest.approx(1e-3)
    assert cfg.train.update_epochs == 3
    cfg = load_config(p, ["--train.learning_rate=5e-4", "--train.total-timesteps", "1e6"])
    assert cfg.train.learning_rate == pytest.approx(5e-4)
    assert cfg.train.total_timesteps == 1_000_000 and isinstance(cfg.train.total_timesteps, int)


def test_unknown_key_in_file(tmp_path):
    p = write_ini(tmp_path, "[train]\nlearnig_rate = 1e-3\n")
    with pytest.raises(ConfigError) as ei:
        load_config(p, [])
    msg = str(ei.value)
    assert "[train] learnig_rate" in msg
    assert "did you mean 'learning_rate'" in msg
    assert "minibatch_size" in msg  # lists the section's keys


def test_unknown_section_in_file(tmp_path):
    p = write_ini(tmp_path, "[trian]\nlearning_rate = 1e-3\n")
    with pytest.raises(ConfigError) as ei:
        load_config(p, [])
    assert "[trian] learning_rate" in str(ei.value)
    assert "[train]" in str(ei.value)


def test_unknown_key_on_cli():
    with pytest.raises(ConfigError) as ei:
        load_config(None, ["--train.minibatch-sise", "256"])
    msg = str(ei.value)
    assert "[train] minibatch_sise" in msg and "did you mean 'minibatch_size'" in msg
    with pytest.raises(ConfigError) as ei:
        load_config(None, ["--policy.hiden_size=64"])
    assert "[policy] hiden_size" in str(ei.value) and "hidden_size" in str(ei.value)
    with pytest.raises(ConfigError, match=r"\[polcy\] hidden_size"):
        load_config(None, ["--polcy.hidden_size", "64"])


def test_malformed_cli_tokens():
    with pytest.raises(ConfigError, match="unexpected"):
        load_config(None, ["train.compile", "true"])
    with pytest.raises(ConfigError, match=r"\[train\] batch_size.*needs a value"):
        load_config(None, ["--train.batch-size"])


def test_batch_not_divisible_by_minibatch():
    with pytest.raises(ConfigError) as ei:
        load_config(None, ["--train.batch_size", "1000", "--train.minibatch_size", "300", "--train.bptt_horizon", "10"])
    msg = str(ei.value)
    assert "batch_size" in msg and "minibatch_size" in msg
    assert "e.g. minibatch_size = " in msg


def test_minibatch_not_divisible_by_horizon():
    with pytest.raises(ConfigError) as ei:
        load_config(
            None, ["--train.batch_size", "4096", "--train.minibatch_size", "1024", "--train.bptt_horizon", "48"]
        )
    msg = str(ei.value)
    assert "[train] bptt_horizon" in msg and "minibatch_size" in msg
    assert "e.g." in msg


def test_suggested_minibatch_is_valid():
    with pytest.raises(ConfigError) as ei:
        load_config(None, ["--train.batch_size=512", "--train.minibatch_size=200"])
    msg = str(ei.value)
    sugg = int(msg.split("e.g. minibatch_size = ")[1].split(")")[0])
    cfg = load_config(None, ["--train.batch_size=512", f"--train.minibatch_size={sugg}"])
    assert cfg.train.minibatch_size == sugg


@pytest.mark.parametrize(
    "tokens, expected",
    [
        (["--train.compile", "False"], "false"),
        (["--train.compile", "True"], "true"),
        (["--train.compile", "0"], "false"),
        (["--train.compile", "yes"], "true"),
        (["--train.compile=OFF"], "false"),
        (["--train.compile=on"], "true"),
        (["--train.compile=Auto"], "auto"),
        (["--train.compile"], "true"),  # bare flag
        (["--train.compile", "--train.dashboard", "false"], "true"),
    ],
)
def test_switch_overrides(tokens, expected):
    """`[train] compile` is a boolean that also takes auto: any boolean spelling is normalised."""
    assert load_config(None, tokens).train.compile == expected


def test_bool_in_file(tmp_path):
    p = write_ini(tmp_path, "[train]\ncompile = No\ndashboard = FALSE\nnorm_adv = 1\n")
    cfg = load_config(p, [])
    assert cfg.train.compile == "false" and cfg.train.dashboard is False and cfg.train.norm_adv is True


def test_an_older_checkpoints_boolean_compile_still_loads():
    data = Config().to_dict()
    data["train"]["compile"] = False  # what checkpoints wrote before compile took auto
    assert config_from_dict(data).train.compile == "false"


def test_bad_bool_errors():
    with pytest.raises(ConfigError, match=r"\[train\] compile = 'maybe'.*auto, true, false"):
        load_config(None, ["--train.compile", "maybe"])
    with pytest.raises(ConfigError, match=r"\[train\] dashboard.*boolean"):
        load_config(None, ["--train.dashboard", "maybe"])


def test_bare_section_enables():
    assert load_config(None, ["--wandb"]).wandb.enable is True
    assert parse_overrides(["--league"]) == [("league", "enable", "true")]


def test_optional_ints(tmp_path):
    cfg = load_config(None, ["--policy.smoothing_eps_anneal_end_step", "5000"])
    assert cfg.policy.smoothing_eps_anneal_end_step == 5000
    for none in ("none", "None", "", "null"):
        cfg = load_config(None, [f"--train.ent_coef_anneal_start_step={none}"])
        assert cfg.train.ent_coef_anneal_start_step is None
    p = write_ini(
        tmp_path,
        "[policy]\nsubaction_temperature_anneal_start_step =\nsubaction_temperature_anneal_end_step = 10_000\n",
    )
    cfg = load_config(p, [])
    assert cfg.policy.subaction_temperature_anneal_start_step is None
    assert cfg.policy.subaction_temperature_anneal_end_step == 10_000
    with pytest.raises(ConfigError, match=r"\[policy\] smoothing_eps_anneal_end_step"):
        load_config(None, ["--policy.smoothing_eps_anneal_end_step", "soon"])


def test_type_errors_name_key(tmp_path):
    with pytest.raises(ConfigError, match=r"\[train\] batch_size.*integer"):
        load_config(None, ["--train.batch_size", "big"])
    with pytest.raises(ConfigError, match=r"\[train\] batch_size.*integer"):
        load_config(None, ["--train.batch_size", "512.5"])
    with pytest.raises(ConfigError, match=r"\[train\] learning_rate.*number"):
        load_config(None, ["--train.learning_rate", "fast"])
    p = write_ini(tmp_path, "[env]\nnum_games = lots\n")
    with pytest.raises(ConfigError, match=r"\[env\] num_games"):
        load_config(p, [])
    # Non-optional ints do not accept none.
    with pytest.raises(ConfigError, match=r"\[train\] update_epochs"):
        load_config(None, ["--train.update_epochs", "none"])


@pytest.mark.parametrize(
    "override, key",
    [
        ("--train.gamma=0", "[train] gamma"),
        ("--train.gamma=1.01", "[train] gamma"),
        ("--train.gae_lambda=1.5", "[train] gae_lambda"),
        ("--train.learning_rate=0", "[train] learning_rate"),
        ("--train.clip_coef=0", "[train] clip_coef"),
        ("--train.compile_mode=fast", "[train] compile_mode"),
        ("--vec.backend=ray", "[vec] backend"),
        ("--env.num_games=0", "[env] num_games"),
        ("--train.checkpoint_interval=0", "[train] checkpoint_interval"),
        ("--train.checkpoint_interval_unit=hours", "[train] checkpoint_interval_unit"),
        ("--train.max_checkpoints=0", "[train] max_checkpoints"),
        ("--train.bptt_horizon=0", "[train] bptt_horizon"),
        ("--policy.smoothing_eps_initial=1.0", "[policy] smoothing_eps_initial"),
        ("--policy.subaction_temperature_final=0", "[policy] subaction_temperature_final"),
        ("--policy.primary_temperature=-1", "[policy] primary_temperature"),
        ("--policy.legal_scorer_dim=-1", "[policy] legal_scorer_dim"),
        ("--policy.legal-effect-dim=9000", "[policy] legal_effect_dim"),
        ("--train.ent_coef_anneal_end_frac=1.5", "[train] ent_coef_anneal_end_frac"),
        ("--base.device=gpu", "[base] device"),
        ("--wandb.mode=sometimes", "[wandb] mode"),
        ("--train.lr_schedule=step", "[train] lr_schedule"),
    ],
)
def test_validation_names_key(override, key):
    with pytest.raises(ConfigError) as ei:
        load_config(None, [override])
    assert key in str(ei.value)


def test_anneal_order_validated():
    with pytest.raises(ConfigError, match=r"\[policy\] smoothing_eps_anneal_start_frac"):
        load_config(
            None, ["--policy.smoothing_eps_anneal_start_frac=0.8", "--policy.smoothing_eps_anneal_end_frac=0.2"]
        )
    with pytest.raises(ConfigError, match=r"\[train\] ent_coef_anneal_start_step"):
        load_config(None, ["--train.ent_coef_anneal_start_step=2000", "--train.ent_coef_anneal_end_step=1000"])
    # An absolute start past the frac-resolved end (end_frac * total_timesteps).
    with pytest.raises(ConfigError, match=r"ent_coef_anneal_start_step"):
        load_config(None, ["--train.total_timesteps=1000", "--train.ent_coef_anneal_start_step=5000"])
    cfg = load_config(
        None, ["--train.ent_coef_anneal_start_step=1000", "--train.ent_coef_anneal_end_step=1000"]
    )  # a step change is fine
    assert cfg.train.ent_coef_anneal_end_step == 1000


def test_valid_devices():
    """auto and cpu always; cuda and cuda:N only for devices torch can see here (else refused, see below)."""
    usable = ["auto", "cpu", *(["cuda"] if torch.cuda.is_available() else [])]
    usable += [f"cuda:{k}" for k in range(torch.cuda.device_count() if torch.cuda.is_available() else 0)]
    for dev in usable:
        assert load_config(None, [f"--base.device={dev}"]).base.device == dev


def test_ini_round_trip_and_from_dict(tmp_path):
    cfg = load_config(CONFIGS / "smoke.ini", ["--policy.smoothing_eps_anneal_end_step=100", "--wandb.tags=a,b"])
    p = tmp_path / "resolved.ini"
    p.write_text(cfg.to_ini())
    assert load_config(p, []) == cfg
    assert config_from_dict(cfg.to_dict()) == cfg
    assert cfg.wandb.tag_list() == ["a", "b"]


# A valid non-default value for every key whose automatic probe value (probe_value) would be
# invalid or cannot be derived (strings). A key missing here gets the automatic value.
PROBE_VALUES = {
    ("base", "run_name"): "probe-run",
    ("base", "device"): "cuda:0" if torch.cuda.is_available() else "cpu",  # only usable devices pass
    ("train", "compile"): "true",
    ("env", "overlap"): "true",
    ("env", "game"): "leduc",
    ("train", "precision"): "bf16",
    ("base", "experiments_dir"): "probe_experiments",
    ("env", "deck_pool"): "configs/decks.json",  # the pool file must exist and parse
    ("vec", "num_envs"): 2,  # with backend = serial (COMPANIONS): native steps one env object
    ("train", "nan_policy"): "skip_batch",
    ("train", "magnet"): "ema",
    ("train", "update_rule"): "neurd",
    ("train", "own_reach_cap"): 5.0,  # 0 (off) or >= 1
    ("train", "explore_temperature"): 3.0,  # 0 (uniform) or >= 1
    ("league", "opponent_sampling"): "nash",
    ("league", "deliverable"): "nash_mixture",
    ("vec", "backend"): "serial",
    ("train", "batch_size"): 32768,
    ("train", "minibatch_size"): 4096,
    ("train", "bptt_horizon"): 32,
    ("train", "lr_schedule"): "cosine",
    ("train", "compile_mode"): "default",
    ("train", "checkpoint_interval_unit"): "steps",
    ("league", "pfsp_weighting"): "linear",
    ("league", "exploiter_opponent"): "snapshot",
    ("league", "exploiter_ratio"): 0.05,  # latest_ratio + bot_ratio (0.9 by default) leave 0.1
    ("league", "rating"): "openskill",  # the only rating system: the default is all there is
    ("league", "evaluation"): "background",
    ("dist", "backend"): "gloo",
    ("wandb", "project"): "probe-project",
    ("wandb", "group"): "probe-group",
    ("wandb", "tags"): "a,b",
    ("wandb", "name"): "probe-name",
    ("wandb", "mode"): "offline",
}
# Keys whose probe value is valid only together with another key's value.
COMPANIONS = {("vec", "num_envs"): ("vec", "backend", "serial")}
ALL_KEYS = [(section, f.name) for section, cls in SECTIONS.items() for f in dataclasses.fields(cls)]


def probe_value(section: str, key: str):
    """A valid value for [section] key that differs from its default (where one exists)."""
    if (section, key) in PROBE_VALUES:
        return PROBE_VALUES[section, key]
    default = getattr(SECTIONS[section](), key)
    tp = typing.get_type_hints(SECTIONS[section])[key]
    if tp is bool:
        return not default
    if default is None:  # Optional[int] anneal steps
        return 1000
    if tp is int:
        return default + 1
    if tp is float:
        return default / 2 if default else 0.25
    raise AssertionError(f"add a probe value for [{section}] {key} ({tp}) to PROBE_VALUES")


def as_text(value, style: int) -> str:
    if isinstance(value, bool):
        return ("true", "on", "yes")[style] if value else ("false", "off", "no")[style]
    return repr(value) if isinstance(value, float) else str(value)


def test_probe_values_name_real_keys():
    assert set(PROBE_VALUES) <= set(ALL_KEYS)
    assert {s for s, _ in ALL_KEYS} == set(SECTIONS) and len(ALL_KEYS) > 60


@pytest.mark.parametrize("section, key", ALL_KEYS, ids=[f"{s}.{k}" for s, k in ALL_KEYS])
def test_every_key_reaches_the_config_from_a_file_and_the_command_line(tmp_path, section, key):
    """Keys come from the dataclass fields: the loader knows every field of every section. A key
    set in an .ini file or on the command line lands in exactly its own field, coerced to the
    field's type (bool stays bool, int stays int, Optional[int] becomes an int)."""
    assert SECTIONS["train"] is TrainSection
    value = probe_value(section, key)
    default = Config()
    only_value = {("league", "rating")}
    if (section, key) not in only_value:  # keys with a single valid value here
        assert getattr(getattr(default, section), key) != value, "a probe value must differ from the default"
    expected = dataclasses.replace(default, **{section: dataclasses.replace(getattr(default, section), **{key: value})})
    extra_line, extra_args = "", []
    if (section, key) in COMPANIONS:
        c_section, c_key, c_value = COMPANIONS[section, key]
        extra_line, extra_args = f"{c_key} = {c_value}\n", [f"--{c_section}.{c_key}", c_value]
        changed = dataclasses.replace(getattr(expected, c_section), **{c_key: c_value})
        expected = dataclasses.replace(expected, **{c_section: changed})
    ini = write_ini(tmp_path, f"[{section}]\n{key} = {as_text(value, 0)}\n{extra_line}")
    dashed = key.replace("_", "-")
    ini_dashed = tmp_path / "dashed.ini"
    ini_dashed.write_text(f"[{section}]\n{dashed} = {as_text(value, 2)}  # a comment\n{extra_line}")
    sources = {
        "file": load_config(ini, []),
        "file, dashed key": load_config(ini_dashed, []),
        "command line": load_config(None, [f"--{section}.{dashed}", as_text(value, 1), *extra_args]),
        "command line, =": load_config(None, [f"--{section}.{key}={as_text(value, 2)}", *extra_args]),
    }
    for where, cfg in sources.items():
        got = getattr(getattr(cfg, section), key)
        assert type(got) is type(value), f"{where}: [{section}] {key} is a {type(got).__name__}, not {type(value)}"
        assert got == value, f"{where}: [{section}] {key} = {got!r}, expected {value!r}"
        assert cfg == expected, f"{where}: setting [{section}] {key} changed other keys"
    # the command line wins over the file
    if (section, key) not in only_value:
        default_value = getattr(getattr(default, section), key)
        if default_value is not None:
            cfg = load_config(ini, [f"--{section}.{dashed}={as_text(default_value, 0)}", *extra_args])
            assert getattr(getattr(cfg, section), key) == default_value


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_cuda_device_without_cuda_is_refused_at_start(tmp_path, capsys):
    with pytest.raises(ConfigError, match=r"\[base\] device = 'cuda'.*valid here: auto, cpu"):
        load_config(None, ["--base.device", "cuda"])
    with pytest.raises(ConfigError, match=r"\[base\] device = 'cuda:1'"):
        load_config(None, ["--base.device", "cuda:1"])
    from tcgleague import train as train_cli

    rc = train_cli.main(
        [
            "--config",
            str(CONFIGS / "smoke.ini"),
            "--base.device",
            "cuda",
            "--base.experiments-dir",
            str(tmp_path / "exp"),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "[base] device" in err and "Traceback" not in err
    assert not (tmp_path / "exp").exists()  # refused before anything is created
