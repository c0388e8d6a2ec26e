"""Run configuration loading: `.ini` files (PufferLib convention) parsed into dataclasses, plus CLI
overrides.

Sections: [base] [env] [vec] [policy] [train] [league] [wandb]. Each section is a dataclass
in config/sections.py; a key is one annotated field with its default, so adding a key is a
one-line change (add a check in config/validate.py if it has constraints).

    cfg = load_config("configs/smoke.ini", ["--train.learning-rate", "1e-3",
                                            "--train.compile=False"])

Keys may be written with dashes or underscores, in files and on the command line. Values are
coerced to the field's type: booleans accept true/false/1/0/yes/no/on/off (any case),
`Optional[int]` fields accept `none`/`null`/empty, ints accept `10_000_000` and integral
floats such as `1e7`. Unknown sections or keys, badly typed values and impossible
combinations raise `ConfigError` naming `[section] key` and a valid value.
"""

from __future__ import annotations

import configparser
import dataclasses
import difflib
import math
import types
import typing
from pathlib import Path
from typing import Any

from .sections import SECTIONS, SWITCHES, Config, ConfigError
from .validate import check_files, validate

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}
_NONE = {"", "none", "null"}


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def load_config(path: str | Path | None = None, overrides: list[str] | None = None, log=print) -> Config:
    """Defaults, then the `.ini` file at `path` (if any), then `overrides`; then validate the
    values and the files they name."""
    cfg = Config()
    if path is not None and not _apply_file(cfg, Path(path)):
        log(f"note: config file {path} sets no keys: every key takes its default")
    for section, key, value in parse_overrides(overrides or []):
        _set(cfg, section, key, value, origin="on the command line")
    validate(cfg)
    check_files(cfg)
    return cfg


def _norm_key(key: str) -> str:
    return key.strip().lower().replace("-", "_")


def _apply_file(cfg: Config, path: Path) -> int:
    """Applies the file's keys; returns how many it set."""
    if not path.is_file():
        what = "is a directory, not a config file" if path.is_dir() else "not found"
        raise ConfigError(f"config file {path} {what} (e.g. --config configs/default.ini)")
    parser = configparser.ConfigParser(
        interpolation=None,
        inline_comment_prefixes=("#", ";"),
        default_section="\x00no-default-section",  # so a [DEFAULT] section is reported
        strict=True,
    )
    parser.optionxform = _norm_key  # type: ignore[method-assign, assignment]
    try:
        with open(path, encoding="utf-8") as f:
            parser.read_file(f, source=str(path))
    except configparser.Error as e:
        raise ConfigError(f"{path}: cannot parse config: {e}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not a UTF-8 text .ini file (byte {e.start}: {e.reason})") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read config: {e.strerror}") from None
    count = 0
    for section in parser.sections():
        for key, value in parser.items(section):
            _set(cfg, section.strip().lower(), key, value, origin=f"in {path}")
            count += 1
    return count


def parse_overrides(tokens: list[str]) -> list[tuple[str, str, str | None]]:
    """Split CLI tokens into (section, key, raw value).

    Accepted forms: `--section.key value`, `--section.key=value`; a boolean key given with no
    value (`--train.compile` followed by another option or nothing) means true, and a bare
    `--section` for a section with an `enable` key (`--wandb`, `--league`) means
    `--section.enable true`. Keys use dashes or underscores.
    """
    out: list[tuple[str, str, str | None]] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if not tok.startswith("--") or len(tok) <= 2:
            raise ConfigError(
                f"unexpected command-line argument {tok!r}: overrides look like "
                f"--section.key value or --section.key=value (e.g. --train.learning-rate 1e-3)"
            )
        body = tok[2:]
        value: str | None
        if "=" in body:
            name, value = body.split("=", 1)
        else:
            name, value = body, None
        if "." not in name:
            section = _norm_key(name)
            if section in SECTIONS and "enable" in _fields(SECTIONS[section]) and value is None:
                out.append((section, "enable", "true"))
                continue
            raise ConfigError(
                f"command-line option {tok!r} is not of the form --section.key (sections: {', '.join(SECTIONS)})"
            )
        section, key = name.split(".", 1)
        section, key = section.strip().lower(), _norm_key(key)
        if value is None:
            _field_type(section, key, origin="on the command line")  # unknown key -> error first
            if i < len(tokens) and not tokens[i].startswith("--"):
                value = tokens[i]
                i += 1
            elif _base_type(_field_type(section, key)) is bool or _is_switch(section, key):
                value = "true"
            else:
                raise ConfigError(f"[{section}] {key}: command-line option {tok} needs a value")
        out.append((section, key, value))
    return out


# --------------------------------------------------------------------------------------------
# Types and coercion
# --------------------------------------------------------------------------------------------


def _fields(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _unknown_key_error(section: str, key: str, origin: str | None) -> ConfigError:
    where = f" ({origin})" if origin else ""
    if section not in SECTIONS:
        close = difflib.get_close_matches(section, list(SECTIONS), n=1)
        hint = f"; did you mean [{close[0]}]?" if close else ""
        return ConfigError(
            f"unknown config key [{section}] {key}{where}: there is no section [{section}]{hint} "
            f"Valid sections: {', '.join('[' + s + ']' for s in SECTIONS)}"
        )
    keys = list(_fields(SECTIONS[section]))
    close = difflib.get_close_matches(key, keys, n=1, cutoff=0.5)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return ConfigError(
        f"unknown config key [{section}] {key}{where}{hint} Valid keys in [{section}]: {', '.join(keys)}"
    )


def _field_type(section: str, key: str, origin: str | None = None) -> Any:
    cls = SECTIONS.get(section)
    if cls is None:
        raise _unknown_key_error(section, key, origin)
    fields = _fields(cls)
    if key not in fields:
        raise _unknown_key_error(section, key, origin)
    return fields[key]


def _is_optional(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in typing.get_args(tp)


def _base_type(tp: Any) -> Any:
    if _is_optional(tp):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0]
    return tp


def _coerce(section: str, key: str, tp: Any, value: Any) -> Any:
    name = f"[{section}] {key}"
    optional = _is_optional(tp)
    base = _base_type(tp)
    if isinstance(value, str):
        text = value.strip()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            text = text[1:-1]
        if optional and text.lower() in _NONE:
            return None
        if base is str:
            return text
        if base is bool:
            low = text.lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            raise ConfigError(f"{name}: expected a boolean (true/false, 1/0, yes/no, on/off), got {value!r}")
        if base is int:
            try:
                return int(text.replace("_", ""), 10)
            except ValueError:
                pass
            try:
                f = float(text.replace("_", ""))
            except ValueError:
                f = math.nan
            if math.isfinite(f) and f.is_integer():
                return int(f)
            extra = ", or none" if optional else ""
            raise ConfigError(f"{name}: expected an integer (e.g. 16{extra}), got {value!r}")
        if base is float:
            try:
                f = float(text.replace("_", ""))
            except ValueError:
                f = math.nan
            if not math.isfinite(f):
                raise ConfigError(f"{name}: expected a finite number (e.g. 0.5), got {value!r}")
            return f
        raise ConfigError(f"{name}: unsupported field type {tp!r}")  # pragma: no cover
    # Native Python values (from_dict, programmatic use).
    if value is None:
        if optional:
            return None
        raise ConfigError(f"{name}: may not be none")
    if base is bool:
        if isinstance(value, bool) or value in (0, 1):
            return bool(value)
        raise ConfigError(f"{name}: expected a boolean, got {value!r}")
    if base is int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
            raise ConfigError(f"{name}: expected an integer, got {value!r}")
        return int(value)
    if base is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"{name}: expected a finite number, got {value!r}")
        return float(value)
    if base is str:
        if not isinstance(value, str):
            raise ConfigError(f"{name}: expected a string, got {value!r}")
        return value
    raise ConfigError(f"{name}: unsupported field type {tp!r}")  # pragma: no cover


def _is_switch(section: str, key: str) -> bool:
    """A boolean key that also takes "auto" (its default): `[train] compile`."""
    return getattr(SECTIONS[section](), key) in SWITCHES


def _switch_value(value: Any) -> Any:
    """true/false spelled any boolean way (or a bool, from an older checkpoint) -> "true"/"false"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    low = value.strip().lower() if isinstance(value, str) else value
    return "true" if low in _TRUE else "false" if low in _FALSE else low


def _set(cfg: Config, section: str, key: str, value: Any, origin: str | None = None) -> None:
    section, key = section.strip().lower(), _norm_key(key)
    tp = _field_type(section, key, origin)
    if _is_switch(section, key):
        value = _switch_value(value)
    setattr(getattr(cfg, section), key, _coerce(section, key, tp, value))


def config_from_dict(data: dict[str, dict[str, Any]]) -> Config:
    """Build and validate a Config from `Config.to_dict()` output (e.g. a checkpoint's copy)."""
    cfg = Config()
    for section, values in data.items():
        for key, value in values.items():
            _set(cfg, section, key, value)
    validate(cfg)
    return cfg
