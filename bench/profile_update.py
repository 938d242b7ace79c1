"""Where a training program's time goes, marljax vs JaxMARL, phase by phase, in one run.

Both frameworks' real training programs (the settings of `bench_pqn.py`, `bench_ippo.py` and
`bench_qmix.py`) are compiled and timed (the fastest of `--repeats` runs) twice: as configured,
and with the learning phase cut down. The difference gives, per 1,000 env steps:

    pqn, ippo:  learn = (t(4 epochs) - t(1 epoch)) * 4 / 3    (epochs of minibatch steps)
    qmix:       learn = t(learning) - t(never learning)      (replay sampling + one TD step)
    rest        = t - learn                                  (acting, env steps, targets / GAE,
                                                              replay insertion, bookkeeping)

For the feed-forward learners the learning phase's arithmetic rate is the networks' matmul FLOPs
(forward + backward = 3x the forward's 2 * rows * sum(in * out) per epoch) over its time: a
program at the machine's matmul rate cannot get faster without doing less work. Each program's
optimised HLO is summarised by `harness.hlo_stats` (loop bodies count once).

    python bench/profile_update.py --jaxmarl-src PATH [--algo pqn ippo qmix] [--updates N]
        [--repeats 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any, NamedTuple

import jax
from harness import (
    JAXMARL_SRC,
    hlo_stats,
    jaxmarl_baseline,
    jaxmarl_matched_ppo,
    machine_info,
    parse_jaxmarl_src,
    time_once,
)

NEVER = 2**30  # a learning start no run reaches (an int32)


class Spec(NamedTuple):
    """One algorithm: its sizes, the two variants and each framework's program builder."""

    task: str
    steps_per_update: dict[str, int]  # per framework
    updates: int
    variants: tuple[Any, Any]  # (as configured, learning cut down)
    learn_scale: float  # learn = (t_full - t_cut) * learn_scale
    layers: tuple[tuple[int, ...], ...]  # feed-forward networks (in, hidden..., out), or ()
    rows_per_epoch: int  # samples x agents in one epoch (feed-forward learners)
    epochs: int


def _pqn_marljax(steps: int, epochs: int):
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


def _jaxmarl_q(module: str, alg: str, steps: int, **over: Any):
    files = ["config/config.yaml", f"config/alg/{alg}.yaml"]
    mod, base = jaxmarl_baseline("baselines/QLearning", module, files)
    config = {**base, "TOTAL_TIMESTEPS": steps, "NUM_SEEDS": 1, "WANDB_MODE": "disabled",
              "TEST_DURING_TRAINING": False, **over}  # fmt: skip
    env, _ = mod.env_from_config(dict(config))
    return mod.make_train(config, env), (jax.random.PRNGKey(0),)


def _ippo_marljax(steps: int, epochs: int):
    trainer, hp = jaxmarl_matched_ppo(
        16, 128, steps, lr=2.5e-4, critic_input="local", hidden_sizes=(64, 64), num_epochs=epochs
    )
    return trainer.train, (jax.random.PRNGKey(0), hp)


def _ippo_jaxmarl(steps: int, epochs: int):
    mod, base = jaxmarl_baseline("baselines/IPPO", "ippo_ff_mpe", ["config/ippo_ff_mpe.yaml"])
    config = {**base, "TOTAL_TIMESTEPS": steps, "ANNEAL_LR": False, "NUM_SEEDS": 1,
              "UPDATE_EPOCHS": epochs}  # fmt: skip
    return mod.make_train(config), (jax.random.PRNGKey(0),)


def _qmix_marljax(steps: int, learning_starts: int):
    import marljax
    from marljax.agents.qlearning import QConfig, make_q_learner, preset
    from marljax.training.train import TrainConfig, make_train

    env, params = marljax.make("particle/simple_spread-v0")
    over, hp = preset("jaxmarl")
    train = TrainConfig(num_envs=8, rollout_len=25, total_env_steps=steps)
    config = QConfig(**{**over, "sequence_len": 25, "team_reward": "sum",
                        "learning_starts": learning_starts}, lr_decay_steps=train.num_updates)  # fmt: skip
    trainer = make_train(train, env, make_q_learner(config, env, params), params)
    return trainer.train, (jax.random.PRNGKey(0), hp.replace(eps_anneal_steps=0.1 * steps))


BUILDERS = {
    "pqn": {"marljax": _pqn_marljax,
            "jaxmarl": lambda s, e: _jaxmarl_q("pqn_vdn_ff", "pqn_vdn_ff_mpe", s, NUM_EPOCHS=e)},
    "ippo": {"marljax": _ippo_marljax, "jaxmarl": _ippo_jaxmarl},
    "qmix": {"marljax": _qmix_marljax,
             "jaxmarl": lambda s, ls: _jaxmarl_q("qmix_rnn", "ql_rnn_mpe", s, LEARNING_STARTS=ls)},
}  # fmt: skip
SPECS = {
    "pqn": Spec("PQN-VDN MPE simple spread, 256 envs x 16 steps, 4 epochs x 16 minibatches",
                {"marljax": 4096, "jaxmarl": 4096}, 30, (4, 1), 4 / 3,
                ((21, 256, 256, 5),), 4096 * 3, 4),
    "ippo": Spec("IPPO-FF MPE simple spread, 16 envs x 128 steps, 4 epochs x 4 minibatches",
                 {"marljax": 2048, "jaxmarl": 2048}, 60, (4, 1), 4 / 3,
                 ((18, 64, 64, 5), (18, 64, 64, 1)), 2048 * 3, 4),
    "qmix": Spec("QMIX-RNN MPE simple spread, 8 envs, one TD step on 32 episodes per update",
                 {"marljax": 8 * 25, "jaxmarl": 8 * 26}, 300, (0, NEVER), 1.0, (), 0, 0),
}  # fmt: skip


def profile(algo: str, framework: str, updates: int, repeats: int = 3) -> dict:
    spec = SPECS[algo]
    per_update = spec.steps_per_update[framework]
    steps = updates * per_update
    times, stats, compile_s = [], None, None
    for variant in spec.variants:
        fn, args = BUILDERS[algo][framework](steps, variant)
        c, run_s, _, compiled = time_once(fn, *args)
        for _ in range(repeats - 1):  # the fastest of `repeats` runs of the compiled program
            t0 = time.perf_counter()
            jax.block_until_ready(compiled(*args))
            run_s = min(run_s, time.perf_counter() - t0)
        times.append(run_s)
        if stats is None:
            stats, compile_s = hlo_stats(compiled), c
    kilo = steps / 1000
    learn = (times[0] - times[1]) * spec.learn_scale
    flops = sum(2 * spec.rows_per_epoch * sum(i * o for i, o in zip(n[:-1], n[1:]))
                for n in spec.layers) * 3 * spec.epochs * updates  # fmt: skip
    return {
        "algo": algo,
        "framework": framework,
        "ms_per_1k_steps": 1e3 * times[0] / kilo,
        "learn_ms_per_1k_steps": 1e3 * learn / kilo,
        "rest_ms_per_1k_steps": 1e3 * (times[0] - learn) / kilo,
        "learn_gflops": flops / learn / 1e9 if flops and learn > 0 else float("nan"),
        "env_steps_per_s": steps / times[0],
        "compile_s": compile_s,
        **stats,
    }


COLS = ["ms_per_1k_steps", "learn_ms_per_1k_steps", "rest_ms_per_1k_steps", "learn_gflops",
        "env_steps_per_s", "compile_s", "instructions", "fusions", "while_loops", "dots",
        "copy_transpose_bytes"]  # fmt: skip


def main() -> None:
    argv = parse_jaxmarl_src(None)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algo", nargs="+", default=list(SPECS), choices=list(SPECS))
    ap.add_argument("--updates", type=int, help="updates per timed program (default: per algo)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per program; the fastest counts")
    ap.add_argument("--json", metavar="PATH", help="also write the rows as JSON to PATH")
    args = ap.parse_args(argv)
    print(machine_info())
    rows = []
    for algo in args.algo:
        updates = args.updates or SPECS[algo].updates
        pair = [profile(algo, fw, updates, args.repeats) for fw in ("jaxmarl", "marljax")]
        rows += pair
        print(f"\n{SPECS[algo].task}, {updates} updates:\n")
        print("| framework | " + " | ".join(COLS) + " |")
        print("|---|" + "---:|" * len(COLS))
        for r in pair:
            cells = [f"{r[c]:,.2f}" if isinstance(r[c], float) else f"{r[c]:,}" for c in COLS]
            print(f"| {r['framework']} | " + " | ".join(cells) + " |")
        j, m = pair
        print(f"\nmarljax / jaxmarl: env steps/s {m['env_steps_per_s'] / j['env_steps_per_s']:.2f}x;"
              f" learning phase {j['learn_ms_per_1k_steps'] / m['learn_ms_per_1k_steps']:.2f}x;"
              f" the rest {j['rest_ms_per_1k_steps'] / m['rest_ms_per_1k_steps']:.2f}x")  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine_info(), "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                       "jaxmarl_src": JAXMARL_SRC["path"], "rows": rows}, f, indent=2)  # fmt: skip
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
