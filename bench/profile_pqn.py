"""Where PQN-VDN's update time goes, marljax vs JaxMARL's `pqn_vdn_ff.py`, in one run.

Both frameworks' real training programs (`bench_pqn.py`'s settings: 256 envs x 16 steps, a
2x256 layer-normalised Q-network on 21 inputs, 16 minibatches) are compiled and timed twice,
with 4 epochs and with 1 epoch per update. The difference is three epochs, so per update:

    epoch     = (t(4 epochs) - t(1 epoch)) / 3       one pass of minibatch steps over the rollout
    rest      = t(4 epochs) - 4 * epoch              rollout (acting, env), targets, bookkeeping

The learning phase's arithmetic rate is the Q-network's matmul FLOPs (forward + backward = 3x the
forward's 2 * rows * sum(in * out)) over `4 * epoch`; a program at the machine's matmul rate
cannot get faster without doing less work. The optimised HLO of each 4-epoch program is
summarised by `harness.hlo_stats` (loop bodies count once).

    python bench/profile_pqn.py --jaxmarl-src PATH [--updates 30] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import time

import jax
from harness import (
    JAXMARL_SRC,
    hlo_stats,
    jaxmarl_baseline,
    machine_info,
    parse_jaxmarl_src,
    time_once,
)

E, T, A, EPOCHS = 256, 16, 3, 4
LAYERS = (21, 256, 256, 5)  # 18 observation features + a one-hot agent id, 2x256, 5 actions


def _marljax(steps: int, epochs: int):
    import marljax
    from marljax.agents import preset
    from marljax.agents.pqn import PQNConfig, PQNHParams, make_pqn_vdn
    from marljax.core import config as cfg
    from marljax.training.train import TrainConfig, make_train

    env, params = marljax.make("particle/simple_spread-v0")
    p = preset("pqn_vdn", "jaxmarl")
    train = cfg.replace_checked(TrainConfig(), {**p.train, "total_env_steps": steps}, "train")
    config = cfg.replace_checked(PQNConfig(), {**p.config, "num_epochs": epochs}, "agent")
    hp = cfg.replace_checked(PQNHParams(), {**p.hparams, "eps_anneal_steps": 0.1 * steps}, "hp")
    trainer = make_train(train, env, make_pqn_vdn(config, env, params), params)
    return trainer.train, (jax.random.PRNGKey(0), hp)


def _jaxmarl(steps: int, epochs: int):
    files = ["config/config.yaml", "config/alg/pqn_vdn_ff_mpe.yaml"]
    mod, base = jaxmarl_baseline("baselines/QLearning", "pqn_vdn_ff", files)
    config = {**base, "TOTAL_TIMESTEPS": steps, "NUM_SEEDS": 1, "WANDB_MODE": "disabled",
              "TEST_DURING_TRAINING": False, "NUM_EPOCHS": epochs}  # fmt: skip
    env, _ = mod.env_from_config(dict(config))
    return mod.make_train(config, env), (jax.random.PRNGKey(0),)


def profile(name: str, build, updates: int) -> dict:
    steps = updates * E * T
    times, stats = {}, None
    for epochs in (EPOCHS, 1):
        fn, args = build(steps, epochs)
        compile_s, run_s, _, compiled = time_once(fn, *args)
        times[epochs] = run_s / updates
        if epochs == EPOCHS:
            stats, compile_4 = hlo_stats(compiled), compile_s
    epoch = (times[EPOCHS] - times[1]) / (EPOCHS - 1)
    fwd = 2 * E * T * A * sum(i * o for i, o in zip(LAYERS[:-1], LAYERS[1:]))
    learn = EPOCHS * epoch
    return {
        "framework": name,
        "update_ms": 1e3 * times[EPOCHS],
        "learn_ms": 1e3 * learn,
        "rest_ms": 1e3 * (times[EPOCHS] - learn),
        "learn_gflops": EPOCHS * 3 * fwd / learn / 1e9 if learn > 0 else float("nan"),
        "env_steps_per_s": E * T / times[EPOCHS],
        "compile_s": compile_4,
        **stats,
    }


def main() -> None:
    argv = parse_jaxmarl_src(None)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--updates", type=int, default=30, help="updates per timed program")
    ap.add_argument("--json", metavar="PATH", help="also write the rows as JSON to PATH")
    args = ap.parse_args(argv)
    rows = [profile("jaxmarl", _jaxmarl, args.updates), profile("marljax", _marljax, args.updates)]
    cols = ["update_ms", "learn_ms", "rest_ms", "learn_gflops", "env_steps_per_s", "compile_s",
            "instructions", "fusions", "while_loops", "dots", "copy_transpose_bytes"]  # fmt: skip
    print(machine_info())
    print(f"\nPQN-VDN MPE simple spread, {args.updates} updates of {E} envs x {T} steps, "
          f"{EPOCHS} epochs x 16 minibatches; per update:\n")  # fmt: skip
    print("| framework | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for r in rows:
        print(f"| {r['framework']} | " + " | ".join(f"{r[c]:,.1f}" if isinstance(r[c], float)
                                                 else f"{r[c]:,}" for c in cols) + " |")  # fmt: skip
    a, b = rows[1], rows[0]
    print(f"\nmarljax / jaxmarl env steps/s {a['env_steps_per_s'] / b['env_steps_per_s']:.2f}x; "
          f"learning phase {b['learn_ms'] / a['learn_ms']:.2f}x; rest {b['rest_ms'] / a['rest_ms']:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine_info(), "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                       "jaxmarl_src": JAXMARL_SRC["path"], "updates": args.updates,
                       "rows": rows}, f, indent=2)  # fmt: skip


if __name__ == "__main__":
    main()
