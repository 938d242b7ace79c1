"""Typed, frozen configuration: strict loading from dicts and `key=value` strings.

Configs are frozen dataclasses (static structure) or `flax.struct` dataclasses (traced
hyperparameters). Loading rejects unknown keys with the close matches, values of the wrong
type with the expected type, non-finite numbers, integers outside int32 and values outside
their field's valid range, before anything is compiled. Every error is a `ConfigError` (a
`ValueError`) whose message names the key.

Each class declares its own fields' ranges and help with `param`, in the field's metadata, so no
table outside a class knows its field names:

    @struct.dataclass
    class MyHParams:
        lr: Any = param(3e-4, lo=0.0, lo_open=True, help="Adam learning rate.")
        gamma: Any = param(0.99, lo=0.0, hi=1.0, help="discount.")

`ranges_of(cls)` and `help_of(cls)` read that metadata back.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import os
import types
import typing
from typing import Any, NamedTuple


class ConfigError(ValueError):
    """A configuration key or value is invalid (the message names it)."""


class Range(NamedTuple):
    """Valid values of a numeric field: `lo <= x <= hi` (`lo < x` when `lo_open`); None: open."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False

    def check(self, value: float, name: str) -> None:
        """Raise `ConfigError` naming `name` if `value` is outside the range."""
        ok = True
        if self.lo is not None:
            ok = value > self.lo if self.lo_open else value >= self.lo
        if self.hi is not None:
            ok = ok and value <= self.hi
        if not ok:
            raise ConfigError(f"{name} must be {self.describe()}, got {value!r}")

    def describe(self) -> str:
        lo = None if self.lo is None else f"{'>' if self.lo_open else '>='} {self.lo:g}"
        if self.hi is None:
            return lo or "any number"
        if self.lo is None:
            return f"<= {self.hi:g}"
        return f"in {'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}]"


#: keys of a field's metadata written by `param` and read by `ranges_of` and `help_of`.
RANGE_KEY, HELP_KEY, SPLIT_KEY = "range", "help", "split"


def param(
    default: Any = dataclasses.MISSING,
    *,
    default_factory: Any = dataclasses.MISSING,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    help: str = "",  # noqa: A002  (the argparse spelling)
    split: bool = False,
) -> Any:
    """A dataclass field with its valid range and a one-line help text in its metadata.

    Works in frozen dataclasses and in `flax.struct.dataclass`es (the field stays a pytree
    node: flax reads `metadata["pytree_node"]`, True when absent).

    Args:
      default: the default value.
      default_factory: a zero-argument callable giving the default (instead of `default`).
      lo: smallest valid value (None: unbounded below).
      hi: largest valid value (None: unbounded above).
      lo_open: `lo` itself is invalid (`x > lo`).
      help: one line for `--help` and docs, e.g. `"discount."`.
      split: a per-learner size that data-parallel training divides over the devices (a
        replay batch or capacity: each device holds `1 / D` of it; `split_config`).

    Returns:
      A `dataclasses.field` whose metadata is `{"range": Range | None, "help": str}` (and
      `"split": True` for a splittable size).

    Raises:
      ValueError: `lo > hi`.
    """
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"param range is empty: lo={lo} > hi={hi}")
    bounded = lo is not None or hi is not None
    metadata = {RANGE_KEY: Range(lo, hi, lo_open) if bounded else None, HELP_KEY: help}
    if split:
        metadata[SPLIT_KEY] = True
    return dataclasses.field(default=default, default_factory=default_factory, metadata=metadata)


def split_fields(cls_or_obj: Any) -> list[str]:
    """Names of the fields declared `param(..., split=True)` (sizes divided over devices)."""
    return [f.name for f in dataclasses.fields(cls_or_obj) if f.metadata.get(SPLIT_KEY)]


def split_config(config: Any, num_shards: int) -> Any:
    """`config` for one of `num_shards` data-parallel learners: `1 / num_shards` of each size
    declared `param(..., split=True)` (the same object when it declares none).

    Raises:
      ConfigError: a size not divisible by `num_shards`, naming the closest valid choices.
    """
    names = split_fields(config)
    if num_shards == 1 or not names:
        return config
    for name in names:
        value = getattr(config, name)
        if value % num_shards:
            lower = value // num_shards * num_shards
            choices = sorted({max(lower, num_shards), lower + num_shards})
            raise ConfigError(
                f"{type(config).__name__}.{name} = {value} is not divisible by the {num_shards} "
                f"data-parallel devices; use e.g. {name} = {' or '.join(map(str, choices))}"
            )
    return dataclasses.replace(config, **{n: getattr(config, n) // num_shards for n in names})


_INT32 = 2**31


def field_names(cls_or_obj: Any) -> list[str]:
    return [f.name for f in dataclasses.fields(cls_or_obj)]


def route_assignments(
    assignments: dict[str, Any],
    groups: dict[str, Any],
    where: str,
    extra_valid: tuple[str, ...] = (),
) -> dict[str, dict[str, Any]]:
    """Split `key -> value` assignments (`--set`) by the first group whose field names hold each
    key: `{group: {key: value}}`, every group present.

    Args:
      assignments: from `parse_assignments`.
      groups: group name -> its valid keys (e.g. `field_names(TrainConfig)`), in precedence order.
      where: what is being set, for the error (e.g. `"--set (algo ippo)"`).
      extra_valid: names the caller routes itself, listed in the error (e.g. `"env.<option>"`).

    Raises:
      ConfigError: an unknown key, with close matches among every valid name.
    """
    out: dict[str, dict[str, Any]] = {g: {} for g in groups}
    for key, value in assignments.items():
        group = next((g for g, names in groups.items() if key in names), None)
        if group is None:
            valid = sorted(set().union(*map(set, groups.values()))) + list(extra_valid)
            raise unknown_key_error(key, valid, where)
        out[group][key] = value
    return out


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
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        # `X | None`: "none"/"null"/None give None, anything else is parsed as X.
        if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("none", "null")):
            return None
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return parse_value(raw, inner[0], None, name)
        return raw
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
        value = _parse_int(raw, name)
        if not -_INT32 <= value < _INT32:
            raise ConfigError(f"{name} must fit in a 32-bit integer, got {raw!r}")
        return value
    if annotation is float or kind is float:
        try:
            if isinstance(raw, bool):
                raise ValueError
            value = float(raw)
        except (TypeError, ValueError, OverflowError):
            raise ConfigError(f"{name} must be a number, got {raw!r}") from None
        if not math.isfinite(value):
            raise ConfigError(f"{name} must be a finite number, got {raw!r}")
        return value
    if origin is tuple or kind is tuple:
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            raw = [raw]
        if not isinstance(raw, (str, list, tuple)):
            raise ConfigError(f"{name} must be a comma-separated list of integers, got {raw!r}")
        items = raw.split(",") if isinstance(raw, str) else list(raw)
        try:
            return tuple(_parse_int(x, name) for x in items if str(x).strip() != "")
        except ConfigError:
            raise ConfigError(
                f"{name} must be a comma-separated list of integers, got {raw!r}"
            ) from None
    if annotation is str or kind is str:
        if not isinstance(raw, (str, int, float)) or isinstance(raw, bool):
            raise ConfigError(f"{name} must be a string, got {raw!r}")
        return str(raw)
    return raw


def _parse_int(raw: Any, name: str) -> int:
    """An integer from an int, an integral float or a string such as `"64"` or `"1e3"`."""
    try:
        if isinstance(raw, bool):
            raise ValueError
        if isinstance(raw, str):
            raw = raw.strip()
            try:
                return int(raw)
            except ValueError:
                value = float(raw)
        else:
            value = raw
        if isinstance(value, float):
            if not math.isfinite(value) or value != int(value):
                raise ValueError
            return int(value)
        return int(value)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None


def ranges_of(cls_or_obj: Any) -> dict[str, Range]:
    """The valid ranges of a dataclass's fields, from their metadata (see `param`).

    Fields without a range (or defined without `param`) are left out.
    """
    return {
        f.name: f.metadata[RANGE_KEY]
        for f in dataclasses.fields(cls_or_obj)
        if f.metadata.get(RANGE_KEY) is not None
    }


def help_of(cls_or_obj: Any) -> dict[str, str]:
    """`{field: one-line help}` of a dataclass, in field order ("" where none was given)."""
    return {f.name: f.metadata.get(HELP_KEY, "") for f in dataclasses.fields(cls_or_obj)}


def check_ranges(obj: Any, where: str, keys: typing.Iterable[str] | None = None) -> None:
    """Raise `ConfigError` naming `where.key` for a field outside its range (`ranges_of`).

    Args:
      obj: a config or hparams dataclass instance.
      where: prefix of the key in messages (e.g. `"hparams"`).
      keys: fields to check (default: every field with a range).
    """
    ranges = ranges_of(obj)
    for key in ranges if keys is None else keys:
        if key not in ranges:
            continue
        value = getattr(obj, key)
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue  # arrays (already stacked grids) are checked value by value by callers
        if not math.isfinite(number):
            raise ConfigError(f"{where}.{key} must be a finite number, got {value!r}")
        # report ints as given (`got 0`, not `got 0.0`); arrays and numpy scalars as floats
        shown = value if isinstance(value, (int, float)) else number
        ranges[key].check(shown, f"{where}.{key}")


def replace_checked(obj: Any, values: dict[str, Any], where: str) -> Any:
    """`dataclasses.replace(obj, **values)` with every key and value validated."""
    if not isinstance(values, dict):
        raise ConfigError(f"{where} must be a mapping of key: value, got {values!r}")
    valid = field_names(obj)
    parsed = {}
    for key, raw in values.items():
        if key not in valid:
            raise unknown_key_error(str(key), valid, where)
        annotation, default = _field_kind(obj, key)
        parsed[key] = parse_value(raw, annotation, getattr(obj, key, default), f"{where}.{key}")
    try:
        out = dataclasses.replace(obj, **parsed)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"Invalid {where}: {err}") from err
    check_ranges(out, where, parsed)
    return out


def to_dict(obj: Any) -> Any:
    """A JSON-friendly dict of a (nested) dataclass.

    Only the fields it is constructed with: fields with `init=False` are derived from those
    (e.g. `Experiment.agent_config`)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = [f.name for f in dataclasses.fields(obj) if f.init]
        return {name: to_dict(getattr(obj, name)) for name in fields}
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
        if not k.strip():
            raise ConfigError(f"{flag} expects key=value, got {item!r} (no key)")
        out[k.strip()] = v.strip()
    return out


#: the largest config file read (bytes): experiments are a few KiB
MAX_CONFIG_BYTES = 4 * 1024 * 1024
#: the deepest nesting of lists and mappings accepted in a config
MAX_CONFIG_DEPTH = 32


def read_config_text(path: str, where: str | None = None) -> str:
    """The text of a config file, bounded: a regular file of at most `MAX_CONFIG_BYTES` (a
    device such as /dev/zero, a pipe or a huge file is refused before it is read).

    Raises:
      ConfigError: not a regular file, or too large; FileNotFoundError / IsADirectoryError.
    """
    import stat

    where = where or path
    info = os.stat(path)
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(f"{where} is a directory")
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{where} is not a regular file (a device, pipe or socket); give a file")
    if info.st_size > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{where} is {info.st_size:,} bytes; a config is at most {MAX_CONFIG_BYTES:,}"
        )
    with open(path, "rb") as f:
        raw = f.read(MAX_CONFIG_BYTES + 1)
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{where} is over {MAX_CONFIG_BYTES:,} bytes; a config is not that large")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"{where} is not UTF-8 text ({err.reason} at byte {err.start})") from None


def _depth(data: Any, limit: int, level: int = 0) -> None:
    if level > limit:
        raise RecursionError
    if isinstance(data, dict):
        for v in data.values():
            _depth(v, limit, level + 1)
    elif isinstance(data, list):
        for v in data:
            _depth(v, limit, level + 1)


def loads(text: str, where: str = "config") -> dict[str, Any]:
    """Parse a JSON or YAML mapping (YAML needs PyYAML, which flax installs), bounded: at most
    `MAX_CONFIG_DEPTH` levels of nesting, and no YAML aliases (`*name`: a few hundred bytes of
    them can expand to gigabytes).

    Raises:
      ConfigError: the text is neither, is not a mapping, nests too deeply or uses an alias.
    """
    try:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as json_err:
            try:
                import yaml
            except ImportError:  # pragma: no cover (flax depends on PyYAML)
                raise ConfigError(f"{where} is not valid JSON: {json_err}") from None
            try:
                data = yaml.load(text, Loader=_no_alias_loader())  # noqa: S506 (safe, no alias)
            except yaml.YAMLError as err:
                raise ConfigError(f"{where} is neither valid JSON nor YAML: {err}") from None
        _depth(data, MAX_CONFIG_DEPTH)
    except RecursionError:
        raise ConfigError(
            f"{where} nests lists or mappings over {MAX_CONFIG_DEPTH} levels deep"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a mapping of key: value, got {type(data).__name__}")
    return data


def _no_alias_loader() -> type:
    """PyYAML's safe loader that refuses aliases (`*name`) before expanding any."""
    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.YAMLError(
                    f"aliases (*{event.anchor}) are not accepted in a config: write the values "
                    f"out{event.start_mark}"
                )
            return super().compose_node(parent, index)

    return NoAliasLoader


def json_number(x: Any) -> float | None:
    """`float(x)`, or None (JSON null) when it is NaN or infinite."""
    x = float(x)
    return x if math.isfinite(x) else None


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
