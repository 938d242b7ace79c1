"""RoShamBo bot population throughput: bot-vs-bot matches per second, side by side.

The task is the paper's cross-table: every ported competition bot against every one, `E` matches
per pair, `T` throws per match (Lanctot et al. 2023 play 1000). Three ways to run it:

- `rps_bots/marljax`: ONE compiled program (`roshambo.population.crosstable_scores`), every
  bot's code running once per throw on the batch of matches it plays in;
- `rps_bots/python_loop`: the reference loop a user of per-step bots writes (OpenSpiel's Python
  bots are driven this way): a Python loop over matches and throws, each throw calling each bot's
  jitted `step` once. Timed on a sample of matches (one per pair, up to `--loop-matches`) and
  scaled to the task;
- `rps_bots/c_original`: the original C programs (the competition's `rsb-ts1.c` and
  `greenberg.c`) playing the same pairs in one process, when `RSB_TS1_C` and `GREENBERG_C` name
  the sources and gcc is present (skipped otherwise).

    python bench/bench_rps_bots.py                       # E = 4, T = 1000
    RSB_TS1_C=... GREENBERG_C=... python bench/bench_rps_bots.py --num-envs 8

One "env step" in the table is one throw of one match (both bots move).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Options, Result, SkipCase, case, env_sizes, env_steps, main, timed  # noqa: E402

from marljax.envs.matrix import roshambo  # noqa: E402
from marljax.envs.matrix.roshambo.base import draw_random, empty_history, record  # noqa: E402
from marljax.envs.matrix.roshambo.population import crosstable_scores  # noqa: E402

LOOP_MATCHES = 60


def _sizes(opts: Options) -> tuple[int, int]:
    episodes = env_sizes(opts, (4,), (1,))[0]
    throws = env_steps(opts, 1000, 50)
    return episodes, throws


def _bots(opts: Options) -> tuple:
    bots = tuple(roshambo.BOTS.values())
    return bots[:6] if opts.quick else bots


def _task(n: int, episodes: int, throws: int) -> str:
    return f"{n}x{n} bots, E={episodes}, T={throws}"


@case("rps_bots/marljax")
def marljax_crosstable(opts: Options) -> list[Result]:
    episodes, throws = _sizes(opts)
    bots = _bots(opts)
    fn = lambda key: crosstable_scores(bots, bots, key, episodes, throws)  # noqa: E731
    t = timed(fn, jax.random.PRNGKey(0), repeats=opts.repeats, first_call=False)
    matches = len(bots) ** 2 * episodes
    return [t.result(_task(len(bots), episodes, throws), "marljax", matches * throws)]


@case("rps_bots/python_loop")
def python_loop(opts: Options) -> list[Result]:
    episodes, throws = _sizes(opts)
    bots = _bots(opts)
    steps = {b.name: jax.jit(b.step) for b in bots}
    pairs = [(a, b) for a in bots for b in bots]
    rng = np.random.default_rng(0)
    sample = [pairs[i] for i in rng.permutation(len(pairs))[:LOOP_MATCHES]]

    def play(a, b, key):
        sa, sb = a.init(throws), b.init(throws)
        ha, hb = empty_history(throws), empty_history(throws)
        for k in jax.random.split(key, throws):
            ka, kb = jax.random.split(k)
            ma, sa = steps[a.name](sa, ha, hb, draw_random(ka, a.num_random))
            mb, sb = steps[b.name](sb, hb, ha, draw_random(kb, b.num_random))
            ha, hb = record(ha, ma), record(hb, mb)
        return int(ma)

    for a, b in sample:  # warm-up: compile every bot's step once, untimed
        for bot in (a, b):
            h = empty_history(throws)
            steps[bot.name](bot.init(throws), h, h, jnp.zeros(bot.num_random, jnp.uint32))
    times = []
    for i, (a, b) in enumerate(sample):
        s = time.perf_counter()
        play(a, b, jax.random.PRNGKey(i))
        times.append(time.perf_counter() - s)
    per_match = float(np.mean(times))
    matches = len(bots) ** 2 * episodes
    run_s = per_match * matches
    return [
        Result(
            task=_task(len(bots), episodes, throws),
            framework="python_loop",
            compile_s=float("nan"),
            run_s=run_s,
            env_steps=matches * throws,
            repeats=1,
            variant=f"scaled from {len(sample)} matches",
            notes={"seconds_per_match": per_match},
        )
    ]


_DRIVER = r"""
#define main rsb_main /* the published rsb-ts1.c has its own main */
#include "rsb-ts1.c"
#undef main
#include "greenberg.c"
#include <sys/time.h>
typedef struct { const char *n; int (*f)(); } E;
E tab[] = { %TABLE% {0, 0}};
int main(int argc, char **argv) {
  int episodes = atoi(argv[1]), n = 0, i, j, e; long total = 0; struct timeval a, b;
  while (tab[n].n) n++;
  srandom(1);
  gettimeofday(&a, 0);
  for (i = 0; i < n; i++) for (j = 0; j < n; j++) for (e = 0; e < episodes; e++)
    total += Play_Match(tab[i].f, tab[j].f);
  gettimeofday(&b, 0);
  printf("%f %ld\n", (b.tv_sec - a.tv_sec) + 1e-6 * (b.tv_usec - a.tv_usec), total);
  return 0;
}
"""

#: C function of each registered name, where they differ
_C_NAMES = {"suncrazybot": "sunCrazybot", "sunnervebot": "sunNervebot"}


@case("rps_bots/c_original")
def c_original(opts: Options) -> list[Result]:
    episodes, throws = _sizes(opts)
    rsb, gb = os.environ.get("RSB_TS1_C"), os.environ.get("GREENBERG_C")
    if not (rsb and gb and shutil.which("gcc")):
        raise SkipCase("set RSB_TS1_C and GREENBERG_C to the C sources (and install gcc)")
    bots = _bots(opts)
    tmp = tempfile.mkdtemp()
    with open(rsb) as f:  # the match length is a compile-time constant of the original
        src = f.read().replace("#define trials    1000", f"#define trials    {throws}")
    src = src.replace("#define verbose3  1", "#define verbose3  0")  # no line per match
    with open(os.path.join(tmp, "rsb-ts1.c"), "w") as f:
        f.write(src)
    shutil.copy(gb, os.path.join(tmp, "greenberg.c"))
    table = " ".join(f'{{"{b.name}", {_C_NAMES.get(b.name, b.name)}}},' for b in bots)
    with open(os.path.join(tmp, "driver.c"), "w") as f:
        f.write(_DRIVER.replace("%TABLE%", table))
    exe = os.path.join(tmp, "driver")
    cmd = ["gcc", "-O2", "-w", "-o", exe, os.path.join(tmp, "driver.c"), "-lm"]
    s = time.perf_counter()
    subprocess.run(cmd, check=True)
    compile_s = time.perf_counter() - s
    runs = []
    for _ in range(max(1, opts.repeats)):
        out = subprocess.run([exe, str(episodes)], capture_output=True, text=True, check=True)
        runs.append(float(out.stdout.split()[0]))
    matches = len(bots) ** 2 * episodes
    return [
        Result(
            task=_task(len(bots), episodes, throws),
            framework="c_original",
            compile_s=compile_s,
            run_s=float(np.median(runs)),
            env_steps=matches * throws,
            run_min_s=min(runs),
            run_max_s=max(runs),
            repeats=len(runs),
            variant="gcc -O2, 1 core",
        )
    ]


if __name__ == "__main__":
    main(
        ["rps_bots/marljax", "rps_bots/python_loop", "rps_bots/c_original"],
        __doc__.split("\n\n")[0],
        baseline="python_loop",
        repeats=2,
        first_call=False,
    )
