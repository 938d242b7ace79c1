"""A/B: the same benchmark cases run from two source trees (e.g. the previous commit and now).

A redesign must keep every measured number at least as good. This runs each named case of a
`bench_*.py` script from tree A and from tree B alternately (A, B, A, B, ...), each in a fresh
process that imports marljax from that tree, and prints per case the env steps/s of each run and
the median ratio B / A. Alternating spreads load changes of a shared machine over both trees.

    git worktree add /tmp/base HEAD~5          # the tree to compare against
    python bench/ab.py --base /tmp/base --script bench_ippo.py --cases ippo_mpe/marljax \\
        --rounds 3 -- --steps 262144

Arguments after `--` go to the benchmark script. Tree B defaults to this checkout. Each tree's
own copy of the script (and of `harness.py`) runs, so a case must exist in both.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

#: Imports marljax from the tree in argv[1] (its `marljax/` and its `envs/` as `marljax.envs`,
#: as the installed package maps them), then runs the script argv[2] with the rest as its argv.
_BOOT = """
import importlib.util, os, runpy, sys
tree, script = sys.argv[1], sys.argv[2]
sys.path.insert(0, tree)
sys.path.insert(0, os.path.dirname(script))
import marljax
if not os.path.isdir(os.path.join(tree, "marljax", "envs")):
    path = os.path.join(tree, "envs")
    spec = importlib.util.spec_from_file_location(
        "marljax.envs", os.path.join(path, "__init__.py"), submodule_search_locations=[path]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["marljax.envs"] = module
    spec.loader.exec_module(module)
assert os.path.abspath(marljax.__file__).startswith(os.path.abspath(tree)), marljax.__file__
sys.argv = [script, *sys.argv[3:]]
runpy.run_path(script, run_name="__main__")
"""


def run_once(tree: str, script: str, cases: list[str], extra: list[str]) -> dict[str, float]:
    """`{case task/framework: env steps/s}` of one fresh-process run of `script` from `tree`."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        path = os.path.join(tree, "bench", script)
        cmd = [sys.executable, "-c", _BOOT, tree, path, "--cases", *cases, "--json", out, *extra]
        # Processes the script starts itself (e.g. its 2-device cases) import from `tree` too.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([tree, os.path.dirname(path)])}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode:
            raise SystemExit(f"{tree}: {script} failed:\n{proc.stderr[-3000:]}")
        with open(out) as f:
            data = json.load(f)
    return {f"{r['name']} [{r['framework']}]": r["steps_per_s"] for r in data["results"]}


def main() -> None:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", required=True, help="tree A (e.g. a worktree of the old commit)")
    p.add_argument("--tree", default=os.path.dirname(HERE), help="tree B (default: this one)")
    p.add_argument("--script", required=True, help="a bench_*.py script name")
    p.add_argument("--cases", nargs="+", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    runs: dict[str, dict[str, list[float]]] = {"A": {}, "B": {}}
    for i in range(args.rounds):
        for label, tree in (("A", args.base), ("B", args.tree)):
            for name, value in run_once(tree, args.script, args.cases, extra).items():
                runs[label].setdefault(name, []).append(value)
            print(f"# round {i + 1}/{args.rounds} {label} done", file=sys.stderr, flush=True)
    print(f"A = {args.base}\nB = {args.tree}\n")
    print("| case | A env steps/s (runs) | B env steps/s (runs) | median B / A |")
    print("|---|---|---|---:|")
    rows = []
    for name in runs["A"]:
        a, b = runs["A"][name], runs["B"].get(name, [])
        if not b:
            continue
        ratio = statistics.median(y / x for x, y in zip(a, b))
        rows.append({"case": name, "A": a, "B": b, "median_ratio": ratio})
        fmt = lambda v: ", ".join(f"{x:,.0f}" for x in v)  # noqa: E731
        print(f"| {name} | {fmt(a)} | {fmt(b)} | {ratio:.3f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"A": args.base, "B": args.tree, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
