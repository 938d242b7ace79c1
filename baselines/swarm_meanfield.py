"""Mean-field policy gradient on Vicsek flocking and Kuramoto synchronisation: learned vs random.

Dec-POMFC-style training (K. Cui, S. Hauck, C. Fabian and H. Koeppl, "Learning Decentralized
Partially Observable Mean Field Control for Artificial Collective Behavior", ICLR 2024): one
shared actor on each agent's local neighbourhood histogram, a critic on the swarm's mean field,
PPO updates (`marljax.agents.meanfield`, registered as `mfpg`). For each task the critic's
mean-field input is a histogram or a kernel (RBF / von Mises) embedding, each trained over
seeds with 100 agents; the trained policies and the untrained (uniformly random) policy of each
seed are then evaluated on fresh episodes, with 100 agents and, unchanged, with 1,000.

Reported: the global order parameter (Vicsek: polarisation; Kuramoto: synchronisation), as the
mean over an episode and its value at the episode's last step, with the IQM over seeds and
95 % stratified-bootstrap confidence intervals, and the probability that the kernel critic
beats the histogram critic (rliable protocol, `marljax.evaluation.stats`).

Reward: each agent's LOCAL order (`local_ratio=1`: itself and its neighbours within the radius),
which gives every agent a signal its own action visibly changes; the score is the GLOBAL order
parameter. (With the purely global reward, `local_ratio=0`, 200 updates of this budget did not
raise the order parameter: credit for a swarm-level quantity is spread over 100 agents.)

    python baselines/swarm_meanfield.py [--seeds 4] [--updates 100] [--eval-agents 100 1000]
        [--out runs] [--results baselines/results/swarm_meanfield.json]

`--results` writes every policy's per-seed order parameter (episode mean and final step) per task
and evaluated swarm size, for the generated tables.
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

from marljax.agents.meanfield import transfer
from marljax.core.registry import make
from marljax.evaluation import stats
from marljax.evaluation.rollout import evaluate_policy
from marljax.shell.experiment import Experiment, build, run_experiment
from marljax.shell.result_files import write_results
from marljax.training.train import TrainConfig

NUM_AGENTS = 100
EVAL_AGENTS = (100, 1_000)
TASKS = {
    # env id: (order-parameter metric, env overrides)
    "swarm/vicsek-v0": ("swarm/polarisation", {"max_steps": 50}),
    "swarm/kuramoto-v0": ("swarm/synchronisation", {"max_steps": 100}),
}
KINDS = ("histogram", "kernel")
AGENT = {"hidden_sizes": (32, 32), "num_epochs": 2, "num_minibatches": 2}
HPARAMS = {"lr": 2e-3, "ent_coef": 0.0, "gamma": 0.9}


def experiment(env_id: str, kind: str, seeds: int, updates: int, out: str) -> Experiment:
    """The training run of one task and mean-field kind."""
    _, overrides = TASKS[env_id]
    return Experiment(
        algo="mfpg",
        env=env_id,
        env_kwargs={"num_agents": NUM_AGENTS, "mean_field": kind, "local_ratio": 1.0, **overrides},
        seeds=seeds,
        train=TrainConfig(num_envs=4, rollout_len=25, total_env_steps=4 * 25 * updates),
        agent=AGENT,
        hparams=HPARAMS,
        out_dir=out,
        checkpoint=False,
    )


def evaluator(exp: Experiment, states, num_agents: int):
    """A jitted `(states [S], key) -> {metric: [S]}` running fresh `num_agents`-agent episodes."""
    built = build(exp)
    kwargs = {**exp.env_kwargs, "num_agents": num_agents}
    if num_agents > 256:
        kwargs["cell_capacity"] = 64  # flocks crowd the hash cells; overflows are checked below
    env, params = make(exp.env, **kwargs)
    one = jax.tree.map(lambda x: x[0], states)
    agent = transfer(built.agent_config, env, one, params)
    steps = int(params.max_steps)
    hparams = jax.tree.map(lambda x: x[0], built.hparams)  # the one setting, [G] -> []

    def run(state, k):
        # The stochastic policies: the untrained reference IS the uniformly random policy.
        return evaluate_policy(
            env, params, agent, state, hparams, k, num_envs=2, num_steps=steps, greedy=False
        )

    batched = jax.jit(jax.vmap(run))

    def evaluate(states, key) -> dict[str, np.ndarray]:
        seeds = jax.tree.leaves(states)[0].shape[0]
        out = batched(states, jax.random.split(key, seeds))
        out = {k: np.asarray(v) for k, v in out.items()}
        if np.any(out["swarm/neighbour_overflow"] > 0):
            print(f"  warning: neighbour-table overflow at {num_agents} agents (approximate)")
        return out

    return evaluate


def untrained(exp: Experiment, seeds: int):
    """The initial (uniform random) policy of every seed, `[S]` stacked."""
    built = build(exp)
    keys = jax.vmap(jax.random.PRNGKey)(np.arange(1000, 1000 + seeds))
    hp = jax.tree.map(lambda x: x[0], built.hparams)
    # lax.map, not vmap: one initialisation at a time (batched LAPACK init can deadlock XLA:CPU).
    return jax.jit(lambda ks: jax.lax.map(lambda k: built.agent.init(k, hp), ks))(keys)


def fmt(iv: stats.Interval) -> str:
    return f"{float(iv.point):.3f} [{float(iv.low):.3f}, {float(iv.high):.3f}]"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4, help="seeds per mean-field kind")
    parser.add_argument("--updates", type=int, default=100, help="PPO updates per run")
    parser.add_argument("--out", default="runs", help="parent folder of the run directories")
    parser.add_argument(
        "--eval-agents",
        type=int,
        nargs="+",
        default=list(EVAL_AGENTS),
        help="swarm sizes to evaluate the trained policies on",
    )
    parser.add_argument("--results", help="write every policy's per-seed scores (JSON)")
    args = parser.parse_args(argv)
    key = jax.random.PRNGKey(0)
    rows = []
    for env_id, (metric, _) in TASKS.items():
        scores: dict[int, dict[str, dict[str, np.ndarray]]] = {n: {} for n in args.eval_agents}
        for kind in KINDS:
            t0 = time.time()
            exp = experiment(env_id, kind, args.seeds, args.updates, args.out)
            result = run_experiment(exp, progress=False)
            trained = jax.tree.map(lambda x: x[0], result.state.agent_state)  # [S, ...]
            print(
                f"{env_id} {kind}: trained {args.seeds} seeds in {time.time() - t0:.0f} s "
                f"({result.run_dir})"
            )
            for n in args.eval_agents:
                k = jax.random.fold_in(key, n)
                evaluate = evaluator(exp, trained, n)
                scores[n][f"mfpg[{kind}]"] = evaluate(trained, k)
                if kind == KINDS[0]:
                    scores[n]["random"] = evaluate(untrained(exp, args.seeds), k)
        for n in args.eval_agents:
            report(env_id, metric, n, scores[n], key)
            rows += [{"env": env_id, "metric": metric, "eval_agents": n, "policy": a,
                      "per_seed": {"episode_mean": s[metric], "final": s[metric + "_final"]}}
                     for a, s in scores[n].items()]  # fmt: skip
    if args.results:
        config = {"algo": "mfpg", "parameter_mode": "shared (mean field)",
                  "train_agents": NUM_AGENTS, "seeds": args.seeds, "updates": args.updates,
                  "env_steps_per_seed": 4 * 25 * args.updates, "agent": AGENT,
                  "hparams": HPARAMS, "tasks": TASKS, "kinds": KINDS,
                  "eval_agents": args.eval_agents, "eval_episodes_per_seed": 2}  # fmt: skip
        write_results(args.results, "baselines/swarm_meanfield.py", config, rows)


def report(env_id: str, metric: str, num_agents: int, scores: dict, key) -> None:
    """Print the IQM over seeds with 95% CIs of every policy, and P(kernel > histogram)."""
    seeds = len(next(iter(scores.values()))[metric])
    print(
        f"\n{env_id}, {num_agents} agents (trained with {NUM_AGENTS}): {metric}, IQM over "
        f"{seeds} seeds [95% CI]"
    )
    for what, name in (("episode mean", metric), ("final step", metric + "_final")):
        per = {a: np.asarray(s[name], np.float32)[:, None] for a, s in scores.items()}
        agg = stats.aggregate_metrics(key, per, metrics=("iqm",))
        print(f"  {what}: " + ", ".join(f"{a} {fmt(agg[a]['iqm'])}" for a in per))
        print(
            "    per seed: "
            + "; ".join(f"{a} " + " ".join(f"{v:.3f}" for v in per[a][:, 0]) for a in per)
        )
        poi = stats.probability_of_improvement_ci(key, per["mfpg[kernel]"], per["mfpg[histogram]"])
        print(f"    P(kernel > histogram) = {fmt(poi)}")


if __name__ == "__main__":
    main()
