"""Typed, frozen configuration: strict loading from dicts and `key=value` strings.

Configs are frozen dataclasses (static structure) or `flax.struct` dataclasses (traced
hyperparameters). Loading rejects unknown keys with the close matches, and values of the wrong
type with the expected type, before anything is compiled.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import typing
from typing import Any


class ConfigError(ValueError):
    """A configuration key or value is invalid (the message names it)."""


def field_names(cls_or_obj: Any) -> list[str]:
    return [f.name for f in dataclasses.fields(cls_or_obj)]


def unknown_key_error(key: str, valid: list[str], where: str) -> ConfigError:
    close = difflib.get_close_matches(key, valid, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return ConfigError(
        f"Unknown {where} key {key!r}.{hint} Valid keys: {', '.join(sorted(valid))}."
    )


def _field_kind(cls: Any, name: str) -> tuple[Any, Any]:
    """(annotation, default) of a dataclass field."""
    hints = typing.get_type_hints(cls if isinstance(cls, type) else type(cls))
    f = {f.name: f for f in dataclasses.fields(cls)}[name]
    default = f.default
    if default is dataclasses.MISSING and f.default_factory is not dataclasses.MISSING:
        default = f.default_factory()
    return hints.get(name, Any), default


def parse_value(raw: Any, annotation: Any, default: Any, name: str) -> Any:
    """Convert `raw` (a string from the CLI, or a JSON value) to the field's type.

    Numbers are checked (e.g. `lr=abc` fails naming `lr`), Literal choices are enforced, tuples of
    ints accept `64,64`, booleans accept true/false/1/0/yes/no.
    """
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        choices = typing.get_args(annotation)
        if raw not in choices:
            raise ConfigError(f"{name} must be one of {list(choices)}, got {raw!r}")
        return raw
    kind = type(default) if default is not None and default is not dataclasses.MISSING else None
    if annotation is bool or kind is bool:
        if isinstance(raw, bool):
            return raw
        s = str(raw).strip().lower()
        if s in ("1", "true", "yes", "on"):
            return True
        if s in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{name} must be a boolean (true/false), got {raw!r}")
    if annotation is int or kind is int:
        try:
            if isinstance(raw, str):
                value = float(raw)
                if value != int(value):
                    raise ValueError
                return int(value)
            if isinstance(raw, float) and raw != int(raw):
                raise ValueError
            return int(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if annotation is float or kind is float:
        try:
            if isinstance(raw, bool):
                raise ValueError
            return float(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"{name} must be a number, got {raw!r}") from None
    if origin is tuple or kind is tuple:
        items = raw.split(",") if isinstance(raw, str) else list(raw)
        try:
            return tuple(int(x) for x in items if str(x).strip() != "")
        except (TypeError, ValueError):
            raise ConfigError(
                f"{name} must be a comma-separated list of integers, got {raw!r}"
            ) from None
    if annotation is str or kind is str:
        return str(raw)
    return raw


def replace_checked(obj: Any, values: dict[str, Any], where: str) -> Any:
    """`dataclasses.replace(obj, **values)` with every key and value validated."""
    valid = field_names(obj)
    parsed = {}
    for key, raw in values.items():
        if key not in valid:
            raise unknown_key_error(key, valid, where)
        annotation, default = _field_kind(obj, key)
        parsed[key] = parse_value(raw, annotation, getattr(obj, key, default), f"{where}.{key}")
    try:
        return dataclasses.replace(obj, **parsed)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"Invalid {where}: {err}") from err


def to_dict(obj: Any) -> Any:
    """A JSON-friendly dict of a (nested) dataclass."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_dict(x) for x in obj]
    if isinstance(obj, dict):
        return {k: to_dict(v) for k, v in obj.items()}
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return obj


def parse_assignments(items: list[str], flag: str = "--set") -> dict[str, str]:
    """`["lr=3e-4", "env.num_rounds=10"]` -> `{"lr": "3e-4", "env.num_rounds": "10"}`."""
    out: dict[str, str] = {}
    for item in items or []:
        if "=" not in item:
            raise ConfigError(f"{flag} expects key=value, got {item!r}")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def diff(a: Any, b: Any, prefix: str = "") -> list[str]:
    """Human-readable differences between two JSON-like values."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a:
                out.append(f"{prefix}{k}: (missing) -> {b[k]!r}")
            elif k not in b:
                out.append(f"{prefix}{k}: {a[k]!r} -> (missing)")
            else:
                out += diff(a[k], b[k], f"{prefix}{k}.")
        return out
    if json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True):
        return [f"{prefix[:-1] if prefix.endswith('.') else prefix}: {a!r} -> {b!r}"]
    return []
