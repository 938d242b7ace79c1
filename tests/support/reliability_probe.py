"""A hostile user's commands against the `marljax` CLI, each run as a real process.

Not part of the test suite (every item below also has a test there); this script re-runs the
commands as a user types them and prints one row each: the exit code, whether a traceback was
printed, the first `marljax:` line, the peak RSS, and the check the outcome must pass (a clear
`marljax: error:` refusal with exit 2, or a run that works).

    python tests/support/reliability_probe.py [--only PART,PART] [--keep DIR]

It works in a temporary folder (or `--keep DIR`), with tiny runs; about 10 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = "--seeds 2 --steps 96 --set num_envs=4 --set rollout_len=4 --set hidden_sizes=16 "
TINY += "--set num_minibatches=2 --set chunk_updates=2 --no-progress"
LIMIT_KB = 2 * 1024 * 1024  # 2 GiB of peak RSS for any refusal


def sh(cmd: str, cwd: str, timeout: float = 600.0, env: dict | None = None) -> dict:
    """Run `cmd` (a `marljax ...` line) under /usr/bin/time; rc, output, peak RSS, seconds."""
    rss_file = os.path.join(cwd, ".rss")
    full = f"/usr/bin/time -o {rss_file} -f %M {cmd}"
    t0 = time.monotonic()
    try:
        p = subprocess.run(full, shell=True, cwd=cwd, capture_output=True, text=True,
                           executable="/bin/bash",
                           timeout=timeout, env={**os.environ, **(env or {})})  # fmt: skip
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = "timeout", (e.stdout or b"").decode() + (e.stderr or b"").decode()
    try:
        rss = int(open(rss_file).read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        rss = -1
    return {"rc": rc, "out": out, "rss": rss, "s": time.monotonic() - t0}


def digest(path: str) -> str:
    """A hash of every file under `path` (names, sizes and contents)."""
    h = hashlib.sha256()
    for base, _, files in sorted(os.walk(path)):
        for f in sorted(files):
            p = os.path.join(base, f)
            h.update(p.encode())
            if not os.path.islink(p):
                h.update(open(p, "rb").read())
    return h.hexdigest()


def refused(r: dict, needle: str = "") -> tuple[bool, str]:
    said = re.search(r"marljax( \w+)?: error:", r["out"])  # (argparse names the subcommand)
    ok = r["rc"] == 2 and said is not None and "Traceback" not in r["out"]
    ok = ok and needle.lower() in r["out"].lower() and 0 < r["rss"] < LIMIT_KB
    return ok, f"exit 2 with `marljax: error:`{f' naming {needle!r}' if needle else ''}"


def works(r: dict, needle: str = "") -> tuple[bool, str]:
    ok = r["rc"] == 0 and "Traceback" not in r["out"] and needle.lower() in r["out"].lower()
    return ok, f"exit 0, no traceback{f', prints {needle!r}' if needle else ''}"


def first_line(out: str) -> str:
    for line in out.splitlines():
        if line.startswith("marljax") or "note" in line.lower():
            return line.strip()[:150]
    return (out.strip().splitlines() or [""])[-1][:150]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated name parts: run those only")
    ap.add_argument("--keep", default=None)
    a = ap.parse_args()
    # Ctrl-C reaches the children as it reaches a user's process (a shell's background job,
    # such as this script under `nohup ... &`, would pass them SIGINT ignored)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    w = a.keep or tempfile.mkdtemp(prefix="probe_")
    os.makedirs(w, exist_ok=True)
    m = f"{sys.executable} -m marljax.shell.cli"
    rows = []

    def probe(name: str, cmd: str, check, *args, timeout: float = 600.0, env=None, pre=None):
        if a.only and not any(o in name for o in a.only.split(",")):
            return None
        if pre:
            pre()
        r = sh(f"{m} {cmd[8:]}" if cmd.startswith("marljax ") else cmd, w, timeout, env)
        ok, want = check(r, *args)
        rows.append((name, cmd, r, ok, want))
        mark = "ok" if ok else "FAIL"
        print(f"[{mark}] {name}: exit {r['rc']}, {r['rss'] / 1024:.0f} MiB, {r['s']:.0f} s; "
              f"{first_line(r['out'])}", flush=True)  # fmt: skip
        return r

    # --- runs the probes act on
    sh(f"{m} train --env matrix/penalty_k0-v0 {TINY} --out runs --name r", w)
    sh(f"{m} train --env social/ipd-v0 {TINY} --out runs --name soc", w)
    sh(f"{m} sweep --env matrix/penalty_k0-v0 {TINY} --grid lr=1e-3,3e-4 --out runs --name g", w)

    # --- wrong results and data loss
    probe("1 diverged sweep", f"marljax sweep --env matrix/climbing-v0 --grid lr=1e20,1e30 "
          f"{TINY} --out runs --name div", lambda r: (
              r["rc"] != 0 and json.load(open(f"{w}/runs/div/sweep.json"))["best"] is None
              and "Traceback" not in r["out"], "non-zero exit, sweep.json best null"))  # fmt: skip
    probe("1 eval of a diverged sweep", "marljax eval runs/div", refused, "NaN/inf")
    probe("1 eval --setting 1 (NON-FINITE)", "marljax eval runs/div --setting 1", refused)
    probe("1 load_policy of a diverged run",
          f"{sys.executable} -c \"from marljax import load_policy; load_policy('runs/div')\"",
          lambda r: (r["rc"] != 0 and "nan/inf" in r["out"].lower(),
                     "raises a Python error naming the NaN/inf"))  # fmt: skip

    # a run being written: readers read, a second writer is refused and changes nothing
    if not a.only or "live" in a.only:
        live = subprocess.Popen(
            f"exec {m} train --env matrix/penalty_k0-v0 {TINY.replace('96', '16000')} "
            "--out runs --name live", shell=True, cwd=w, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)  # fmt: skip
        while not os.path.exists(f"{w}/runs/live/checkpoints") or not any(
            n.isdigit() for n in os.listdir(f"{w}/runs/live/checkpoints")
        ):
            time.sleep(0.2)
        cfg = open(f"{w}/runs/live/config.json").read()
        for i in range(3):
            probe(f"2 eval while training ({i + 1})", "marljax eval runs/live",
                  lambda r: (r["rc"] in (0, 2) and "Traceback" not in r["out"],
                             "exit 0 or a refusal, no traceback"))  # fmt: skip
        probe("3 second writer --resume --steps 128000", "marljax train --resume runs/live "
              "--steps 128000", lambda r: (refused(r, "lock")[0] or refused(r, "being written")[0]
                                         or refused(r)[0], "refused"))  # fmt: skip
        rows[-1] = (*rows[-1][:3], rows[-1][3] and open(f"{w}/runs/live/config.json").read() == cfg,
                    "refused, config.json unchanged")  # fmt: skip
        live.send_signal(signal.SIGINT)
        out, _ = live.communicate(timeout=120)
        ok = live.returncode == 130 and "Traceback" not in out
        rows.append(("2 the writer, Ctrl-C after the readers", "", {"rc": live.returncode,
                     "out": out, "rss": 0, "s": 0}, ok, "exit 130, no traceback"))  # fmt: skip
        print(f"[{'ok' if ok else 'FAIL'}] the writer: exit {live.returncode}", flush=True)
        probe("2 the writer resumes", "marljax train --resume runs/live --no-progress", works)

    # hand-edited config
    def edit(key, value):
        def pre():
            shutil.rmtree(f"{w}/runs/e", ignore_errors=True)
            shutil.copytree(f"{w}/runs/r", f"{w}/runs/e")
            path = f"{w}/runs/e/config.json"
            c = json.load(open(path))
            c["experiment"]["agent"][key] = value
            json.dump(c, open(path, "w"))

        return pre

    probe(
        "4 edited activation, --resume",
        "marljax train --resume runs/e --steps 192",
        refused,
        "activation",
        pre=edit("activation", "relu"),
    )
    probe("4 edited activation, eval", "marljax eval runs/e", refused, "activation")
    probe(
        "4 edited hidden_sizes, --resume",
        "marljax train --resume runs/e --steps 192",
        refused,
        "hidden_sizes",
        pre=edit("hidden_sizes", [32]),
    )

    # symlinks out of a run
    def link(name):
        def pre():
            shutil.rmtree(f"{w}/runs/l", ignore_errors=True)
            shutil.copytree(f"{w}/runs/r", f"{w}/runs/l")
            os.makedirs(f"{w}/outside", exist_ok=True)
            target = f"{w}/outside/{name.replace('/', '')}"
            if name == "checkpoints":
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(f"{w}/runs/r/checkpoints", target)
                shutil.rmtree(f"{w}/runs/l/checkpoints")
            else:
                open(target, "w").write("outside\n")
                if os.path.exists(f"{w}/runs/l/{name}"):
                    os.remove(f"{w}/runs/l/{name}")
            os.symlink(target, f"{w}/runs/l/{name}")

        return pre

    for name in (".lock", "progress.csv", "learning_curve.png", "checkpoints"):
        link(name)()
        t = f"{w}/outside/{name.replace('/', '')}"
        before = digest(t) if os.path.isdir(t) else open(t, "rb").read()

        def check(r, name=name, before=before):
            t = f"{w}/outside/{name.replace('/', '')}"
            same = digest(t) == before if os.path.isdir(t) else open(t, "rb").read() == before
            return (
                r["rc"] in (0, 2) and "Traceback" not in r["out"] and same,
                "outside file unchanged, no traceback",
            )

        probe(f"5 symlinked {name}, --resume", "marljax train --resume runs/l --steps 192", check)

    # Ctrl-C during compile, 3 tries
    if not a.only or "ctrl" in a.only:
        for i in range(3):
            shutil.rmtree(f"{w}/runs/c", ignore_errors=True)
            p = subprocess.Popen(f"exec {m} train --env matrix/penalty_k0-v0 "
                                 f"{TINY.replace('96', '640000')} --out runs --name c",
                                 shell=True, cwd=w, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)  # fmt: skip
            while not os.path.exists(f"{w}/runs/c/manifest.json") and p.poll() is None:
                time.sleep(0.05)
            p.send_signal(signal.SIGINT)
            try:
                out, _ = p.communicate(timeout=240)
                rc = p.returncode
            except subprocess.TimeoutExpired:
                p.kill()
                out, rc = p.communicate()[0], "hang"
            ok = rc == 130 and "Traceback" not in out
            rows.append(
                (
                    f"7 Ctrl-C while compiling ({i + 1})",
                    "train ... then SIGINT",
                    {"rc": rc, "out": out, "rss": 0, "s": 0},
                    ok,
                    "exit 130, no traceback",
                )
            )
            print(f"[{'ok' if ok else 'FAIL'}] Ctrl-C while compiling: exit {rc}", flush=True)

    def drop_figure():
        shutil.rmtree(f"{w}/runs/f", ignore_errors=True)
        shutil.copytree(f"{w}/runs/r", f"{w}/runs/f")
        os.remove(f"{w}/runs/f/learning_curve.png")

    probe("7 resume of a finished run without its figure", "marljax train --resume runs/f",
          lambda r: (works(r)[0] and os.path.exists(f"{w}/runs/f/learning_curve.png"),
                     "exit 0, learning_curve.png drawn"), pre=drop_figure)  # fmt: skip

    # --- unbounded input
    open(f"{w}/laughs.yaml", "w").write(
        "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
        "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
        "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n")  # fmt: skip
    open(f"{w}/deep.json", "w").write("[" * 5000 + "]" * 5000)
    probe("U --config /dev/zero", "marljax train --config /dev/zero", refused)
    probe("U YAML alias chain", "marljax train --config laughs.yaml", refused)
    probe("U JSON nested 5000 deep", "marljax train --config deep.json", refused)
    probe("U simple spread, 100000 agents", "marljax train --env particle/simple_spread-v0 "
          "--set env.num_agents=100000", refused)  # fmt: skip
    probe("U public goods, 100000 players", "marljax train --env matrix/public_goods-v0 "
          "--set env.num_agents=100000", refused)  # fmt: skip
    probe("U eval --episodes 1e8", "marljax eval runs/r --episodes 100000000", refused)
    probe("U psro --population 100000", "marljax psro --env matrix/rps-v0 --population 100000",
          refused, timeout=120)  # fmt: skip
    probe("U psro --population 3000", "marljax psro --env matrix/rps-v0 --population 3000",
          lambda r: (r["rc"] in (0, 2) and "Traceback" not in r["out"] and r["s"] < 120
                     and 0 < r["rss"] < LIMIT_KB, "ends in under 120 s, under 2 GiB"),
          timeout=300)  # fmt: skip

    # --- user errors
    probe("T ipd num_rounds=-5", f"marljax train --env matrix/ipd-v0 --set env.num_rounds=-5 "
          f"{TINY}", refused, "num_rounds")  # fmt: skip
    probe("T eval --crossplay --roles 5", "marljax eval runs/r --crossplay runs/r --roles 5",
          refused, "roles")  # fmt: skip

    def truncate():
        shutil.rmtree(f"{w}/runs/t", ignore_errors=True)
        shutil.copytree(f"{w}/runs/r", f"{w}/runs/t")
        data = open(f"{w}/runs/t/metrics.npz", "rb").read()
        open(f"{w}/runs/t/metrics.npz", "wb").write(data[: len(data) // 2])

    probe(
        "T plot of a truncated metrics.npz", "marljax plot runs/t", refused, "metrics", pre=truncate
    )
    probe("T --log wandb without a login", f"marljax train --env matrix/penalty_k0-v0 {TINY} "
          "--log wandb --out runs --name wb", refused, "wandb",
          env={"WANDB_API_KEY": "", "WANDB_MODE": "", "HOME": w})  # fmt: skip
    probe("T jaxmarl/SMAX env.scenario=3m", "marljax train --env jaxmarl/SMAX --set "
          "env.scenario=3m --seeds 1 --steps 512 --set num_envs=4 --set rollout_len=128 "
          "--set hidden_sizes=16 --no-progress --out runs --name smax", works)  # fmt: skip

    # --- silent or misleading
    probe("S hasac warmup over the budget", "marljax train --algo hasac --env "
          "particle/simple_spread-v0 --set env.continuous=true --steps 8192 --seeds 1 "
          "--no-progress --out runs --name hs", works, "warmup")  # fmt: skip

    def tb_series(r):
        blob = b"".join(
            open(os.path.join(b, f), "rb").read()
            for b, _, fs in os.walk(f"{w}/runs/tb/tensorboard")
            for f in fs
        )
        labels = set(re.findall(rb"lr[=_][0-9.e+-]+/", blob))
        return works(r)[0] and len(labels) >= 2, "one series per setting (tags 'lr_.../...')"

    probe("S sweep --log tensorboard", f"marljax sweep --env matrix/penalty_k0-v0 {TINY} "
          "--grid lr=1e-3,3e-4 --log tensorboard --out runs --name tb", tb_series)  # fmt: skip
    probe("S eval of a social env", "marljax eval runs/soc", works, "cooperation")
    probe("S ipd num_rounds=0", f"marljax train --env matrix/ipd-v0 --set env.num_rounds=0 "
          f"{TINY}", refused, "num_rounds")  # fmt: skip
    probe("S eval --max-steps 0", "marljax eval runs/r --max-steps 0", refused, "max-steps")
    probe("S newline in a run name", f"marljax train --env matrix/penalty_k0-v0 {TINY} "
          "--out runs --name $'a\\nb'", refused, "name")  # fmt: skip

    def no_checkpoints():
        shutil.rmtree(f"{w}/runs/n", ignore_errors=True)
        shutil.copytree(f"{w}/runs/r", f"{w}/runs/n")
        shutil.rmtree(f"{w}/runs/n/checkpoints")

    probe("S --resume with every checkpoint deleted", "marljax train --resume runs/n",
          works, "no checkpoint", pre=no_checkpoints)  # fmt: skip
    probe(
        "S sweep resume with a changed hparam",
        "marljax sweep --resume runs/g --set lr=0.1",
        lambda r: (
            r["rc"] == 2
            and "--allow-hparam-change" not in r["out"]
            and "Traceback" not in r["out"],
            "refused, no advice sweep rejects",
        ),
    )
    open(f"{w}/list.json", "w").write('[{"algo": "ippo"}]')
    probe("S wrong-schema --config", "marljax train --config list.json", refused, "mapping")

    def read_only():
        shutil.rmtree(f"{w}/runs/ro", ignore_errors=True)
        shutil.copytree(f"{w}/runs/r", f"{w}/runs/ro")
        for base, dirs, files in os.walk(f"{w}/runs/ro"):
            for f in files + dirs:
                os.chmod(os.path.join(base, f), 0o555 if f in dirs else 0o444)
        os.chmod(f"{w}/runs/ro", 0o555)

    probe("S eval of a read-only run", "marljax eval runs/ro", works, "IQM", pre=read_only)
    probe("S 2-seed CI caveat", "marljax eval runs/r", works, "not a reliable 95% CI")

    # --- the documented path
    probe("D README: train --config runs/<run>/config.json", "marljax train --config "
          "runs/r/config.json --steps 96", works)  # fmt: skip
    out = sh(f"{m} eval runs/g", w)["out"]
    label = (re.findall(r"lr=[0-9.e+-]+", out) or ["lr=0.001"])[0]
    probe(
        f"D eval SWEEP --setting {label} (the printed label)",
        f"marljax eval runs/g --setting {label}",
        works,
    )

    # --- stale text and noise
    probe("X eval -h prints 95%", "marljax eval -h", lambda r: (works(r)[0] and "95%%" not in
          r["out"] and "95%" in r["out"], "95%, not 95%%"))  # fmt: skip
    probe("X --algo MAPPO", f"marljax train --algo MAPPO {TINY}", refused, "mappo")
    noisy = [n for n, _, r, *_ in rows if "Event loop is closed" in r["out"]]
    print(f"orbax 'Event loop is closed' in: {noisy or 'no command'}")

    bad = [r for r in rows if not r[3]]
    print(f"\n{len(rows) - len(bad)} of {len(rows)} probes as they must be")
    print(
        "\n| probe | exit | traceback | peak RSS (MiB) | s | must | held |\n|---|---|---|---|---|---|---|"
    )
    for name, _, r, ok, want in rows:
        print(
            f"| {name} | {r['rc']} | {'yes' if 'Traceback' in r['out'] else 'no'} | "
            f"{r['rss'] / 1024:.0f} | {r['s']:.0f} | {want} | {'yes' if ok else 'NO'} |"
        )
    if not a.keep:
        shutil.rmtree(w, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
