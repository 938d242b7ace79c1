"""Run directories that know whose they are: a manifest written first, checked by every reader,
and a lock that keeps a second writer out.

`manifest.json` holds the directory's kind (`"train"` or `"sweep"`), the format version and a
hash of the run's static configuration. `marljax train --resume` refuses a sweep's directory,
a directory written by a newer format, and a directory another process is writing; a new run
refuses a folder that already holds another run's files (checkpoints, metrics, a config).
Directories written before manifests existed (config.json, no manifest) are accepted as
`"train"` runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from typing import Any

MANIFEST = "manifest.json"
LOCK = ".lock"
FORMAT_VERSION = 1
KINDS = ("train", "sweep")
#: files and folders that belong to a run: a new run never writes into a folder holding them.
RUN_FILES = ("config.json", "metrics.npz", "metrics.json", "checkpoints", "sweep.json", MANIFEST)


#: experiment keys that may differ between a run and its resumption (with `train.total_env_steps`
#: and `train.progress`).
RESUMABLE_KEYS = ("out_dir", "name", "checkpoint", "check_finite", "devices", "layout", "log")


def frozen_part(config: dict[str, Any]) -> dict[str, Any]:
    """What of a config.json only marljax may change: its experiment as written, without the keys
    a resume may change (`RESUMABLE_KEYS`, the budget)."""
    exp = dict(config.get("experiment") or {}) if isinstance(config, dict) else {}
    for k in RESUMABLE_KEYS:
        exp.pop(k, None)
    if isinstance(exp.get("train"), dict):
        exp["train"] = {
            k: v for k, v in exp["train"].items() if k not in ("total_env_steps", "progress")
        }
    return exp


def config_hash(static: dict[str, Any]) -> str:
    """A short hash of a run's static configuration (canonical JSON)."""
    text = json.dumps(static, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def create(
    run_dir: str, kind: str, static: dict[str, Any], config: dict[str, Any] | None = None
) -> None:
    """Make `run_dir` for a new run of `kind`: its manifest first, then (with `config`) its
    config.json, whose `frozen_part` and hash the manifest keeps (`verify`). If a write fails
    (e.g. no space), what was written is removed, so no half-run is left behind.

    Raises:
      FileExistsError: `run_dir` already holds a run's files (naming them).
      NotADirectoryError / PermissionError: from the file system, naming the path.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    refuse_taken(run_dir)
    made = not os.path.exists(run_dir)
    os.makedirs(run_dir, exist_ok=True)
    manifest = {"kind": kind, "format_version": FORMAT_VERSION, "config_hash": config_hash(static)}
    if config is not None:
        manifest.update(_frozen_entry(config))
    path = os.path.join(run_dir, MANIFEST)
    try:
        _write_json(path, manifest)
        if config is not None:
            _write_json(os.path.join(run_dir, "config.json"), config)
    except OSError as err:  # e.g. a full disk: leave no half-run that neither resumes nor restarts
        for name in (MANIFEST, MANIFEST + ".tmp", "config.json.tmp"):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(run_dir, name))
        if made:
            with contextlib.suppress(OSError):
                os.rmdir(run_dir)
        raise type(err)(
            err.errno, f"cannot write the run directory {run_dir} ({err.strerror or err}: "
            f"{err.filename}); nothing of the run was left behind"
        ) from None  # fmt: skip


def _frozen_entry(config: dict[str, Any]) -> dict[str, Any]:
    frozen = frozen_part(config)
    return {"experiment_hash": config_hash(frozen), "experiment": frozen}


def verify(run_dir: str, config: dict[str, Any]) -> None:
    """Refuse a config.json changed by hand after marljax wrote it: its `frozen_part` must hash
    to the manifest's `experiment_hash` (directories written before the hash existed pass).

    Raises:
      ValueError: naming the keys that changed and the way out.
    """
    path = os.path.join(run_dir, MANIFEST)
    try:
        with open(path) as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return  # no manifest (an old run) or a damaged one (`check` refuses it)
    want = manifest.get("experiment_hash") if isinstance(manifest, dict) else None
    if not want or config_hash(frozen_part(config)) == want:
        return
    from marljax.core.config import diff

    changed = diff(manifest.get("experiment") or {}, frozen_part(config), "experiment.")
    listed = "; ".join(changed[:8]) + (" ..." if len(changed) > 8 else "")
    raise ValueError(
        f"{os.path.join(run_dir, 'config.json')} was changed after the run was written "
        f"(manifest.json's hash no longer matches){': ' + listed if listed else ''}. Its "
        "checkpoints belong to the original configuration: put it back, or train the changed "
        "one as a new run (marljax train --config FILE --name NEW)."
    )


def record(run_dir: str, config: dict[str, Any]) -> None:
    """After marljax itself changed config.json (under the lock: e.g. `--allow-hparam-change`),
    make the manifest's `experiment_hash` match it again."""
    path = os.path.join(run_dir, MANIFEST)
    with open(path) as f:
        manifest = json.load(f)
    if "experiment_hash" in manifest:
        _write_json(path, {**manifest, **_frozen_entry(config)})


def refuse_taken(run_dir: str) -> None:
    """Raise `FileExistsError` if `run_dir` already holds a run's files (naming them), or
    `NotADirectoryError` if it is a file: checked before compiling a new run."""
    if os.path.exists(run_dir) and not os.path.isdir(run_dir):
        raise NotADirectoryError(f"{run_dir} is a file, not a run directory")
    _check_writable(run_dir)
    if os.path.isdir(run_dir):
        found = sorted(n for n in os.listdir(run_dir) if n in RUN_FILES)
        if found:
            raise FileExistsError(
                f"{run_dir} already holds a run ({', '.join(found)}); resume it "
                "(marljax train --resume) or choose another --name"
            )


def check(run_dir: str, kind: str) -> dict[str, Any]:
    """The manifest of an existing run directory that a command of `kind` may read or extend.

    Raises:
      FileNotFoundError: not a run directory.
      ValueError: another kind, a newer format, or an unreadable manifest.
    """
    path = os.path.join(run_dir, MANIFEST)
    if not os.path.exists(path):
        if os.path.exists(os.path.join(run_dir, "config.json")):
            return {"kind": "train", "format_version": 0}  # written before manifests existed
        raise FileNotFoundError(f"{run_dir} is not a run directory (no manifest.json)")
    try:
        with open(path) as f:
            manifest = json.load(f)
        found, version = manifest["kind"], int(manifest["format_version"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{path} is damaged ({err}); the directory cannot be trusted") from None
    if found != kind:
        raise ValueError(
            f"{run_dir} is a {found} directory; this command needs a {kind} directory"
            + (" (a sweep is not resumable with marljax train)" if found == "sweep" else "")
        )
    if version > FORMAT_VERSION:
        raise ValueError(
            f"{run_dir} was written by a newer marljax (format {version} > {FORMAT_VERSION}); "
            "upgrade marljax to read it"
        )
    return manifest


def _check_writable(run_dir: str) -> None:
    """Refuse a run directory that could not be created, before anything is compiled: an
    ancestor that is a file, or a folder that refuses a write (permission, read-only file
    system, no space). The nearest existing ancestor gets a probe folder, removed at once."""
    parent = os.path.abspath(run_dir)
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise NotADirectoryError(f"cannot create {run_dir}: {parent} is a file, not a folder")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".marljax-probe-", dir=parent))
    except OSError as err:
        raise type(err)(
            f"cannot create {run_dir}: {parent} refuses writes ({err.strerror or err})"
        ) from None


def refuse_links(run_dir: str) -> None:
    """Refuse a run directory holding a symbolic link anywhere inside it: marljax never writes
    through one (a linked `progress.csv`, figure, lock or `checkpoints/` would change files
    outside the run). Called by every writer before its first write.

    Raises:
      ValueError: naming the link and where it points.
    """
    for root, dirs, files in os.walk(run_dir, followlinks=False):
        for name in sorted(dirs + files):
            path = os.path.join(root, name)
            if os.path.islink(path):
                raise ValueError(
                    f"{path} is a symbolic link (to {os.readlink(path)}); marljax never writes "
                    "through links in a run directory, which could change files outside it. "
                    "Replace the link with the file or folder itself, or remove it."
                )


@contextlib.contextmanager
def lock(run_dir: str) -> Iterator[None]:
    """Hold `run_dir`'s write lock; a second writer gets a clear error at once, not a clash.

    Raises:
      BlockingIOError: another process holds the lock (its pid is named).
    """
    path = os.path.join(run_dir, LOCK)
    refuse_links(run_dir)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise BlockingIOError(
                f"{run_dir} is being written by another marljax process (pid {owner}); "
                "wait for it to finish"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _write_json(path: str, data: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


__all__ = [
    "FORMAT_VERSION",
    "KINDS",
    "RESUMABLE_KEYS",
    "check",
    "config_hash",
    "create",
    "frozen_part",
    "lock",
    "record",
    "refuse_links",
    "refuse_taken",
    "verify",
]
