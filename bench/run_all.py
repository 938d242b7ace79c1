"""Run every registered benchmark case (all `bench/bench_*.py`) and print one markdown report.

    python bench/run_all.py [--markdown PATH] [--json PATH] [--quick] [--cases NAME ...]

Cases of optional frameworks that are not installed are skipped with the install command.
Ratios are taken against the first of `BASELINES` that measured a task.
"""

from __future__ import annotations

import importlib
import pathlib
import sys

import harness

BENCH_DIR = pathlib.Path(__file__).resolve().parent
# Per task, ratios are against the first of these that measured it.
BASELINES = ("jaxmarl", "numpy")


def load_modules() -> list:
    """Import every `bench_*.py` next to this file (importing registers its cases)."""
    if str(BENCH_DIR) not in sys.path:
        sys.path.insert(0, str(BENCH_DIR))
    return [importlib.import_module(p.stem) for p in sorted(BENCH_DIR.glob("bench_*.py"))]


def run() -> None:
    modules = load_modules()
    p = harness.parser(__doc__.splitlines()[0], repeats=3, first_call=False)
    p.add_argument("--markdown", metavar="PATH", help="also write the report to PATH")
    args = p.parse_args()
    names = args.cases or list(harness.CASES)
    unknown = [n for n in names if n not in harness.CASES]
    if unknown:
        raise SystemExit(f"unknown case(s) {unknown}; registered: {sorted(harness.CASES)}")
    opts = harness.Options(quick=args.quick, repeats=args.repeats, first_call=args.first_call)
    results, skipped = harness.run_cases(names, opts)

    parts = [f"Machine: {harness.machine_info()}", harness.format_table(results, BASELINES)]
    for module in modules:
        extra = module.report(results) if hasattr(module, "report") else ""
        if extra.strip():
            parts.append(extra.strip())
    parts += [f"skipped {name}: {why}" for name, why in skipped.items()]
    text = "\n\n".join(parts)
    print(text)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(text + "\n")
        print(f"\nwrote {args.markdown}", file=sys.stderr)
    if args.json:
        harness.write_json(args.json, results, skipped)


if __name__ == "__main__":
    run()
