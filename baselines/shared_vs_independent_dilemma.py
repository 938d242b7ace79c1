"""Shared vs independent parameters (IPPO or IQL) on the repeated Stag Hunt: cooperation over seeds.

Small-scale direction check of "How Exploration Breaks Cooperation in Shared-Policy Multi-Agent
Reinforcement Learning": independent learners whose policy parameters are shared by both agents vs
one parameter set per agent, on a dilemma with a stable, payoff-dominant cooperative equilibrium
(Stag Hunt, 10 rounds: stag-stag 2 each, hare 1 whatever the other does, stag alone 0). Each mode
trains all seeds in one program; the cooperation rate (fraction of stag choices of the trained
stochastic policies, `marljax.evaluation.social`) is reported per seed with a bootstrap 95% CI.
With `--algo iql` the learners are independent DQNs (the value-based learner without a mixer,
epsilon-greedy during training), as in the paper; they are evaluated greedily (argmax Q).

    python baselines/shared_vs_independent_dilemma.py [--algo ippo|iql] [--seeds 64] [--out runs]
        [--results baselines/results/shared_vs_independent_ippo.json]  (per-seed rates, JSON)
"""

import argparse

import jax
import numpy as np

import marljax.envs.social  # noqa: F401  (registers social/*)
from marljax.evaluation.rollout import evaluate_policy
from marljax.evaluation.social import SocialMetrics, bootstrap_ci
from marljax.shell.experiment import Experiment, build, run_experiment
from marljax.shell.result_files import write_results
from marljax.training.train import TrainConfig

#: per algorithm: (static agent settings, traced hparams, env steps per run)
SETTINGS = {
    "ippo": ({"hidden_sizes": (32,), "num_minibatches": 2}, {"lr": 3e-3, "ent_coef": 0.05}, 16_000),
    "iql": (
        {
            "recurrent": False,
            "hidden_sizes": (32,),
            "sequence_len": 10,
            "batch_size": 32,
            "buffer_size": 1000,
            "target": "one_step",
            "target_update_interval": 50,
        },
        {"lr": 3e-3, "eps_anneal_steps": 10_000.0, "eps_finish": 0.05},
        32_000,
    ),
}


def run_mode(algo: str, mode: str, seeds: int, out: str, key: jax.Array) -> dict:
    """Train `seeds` runs in one program, evaluate their cooperation rate; the result row."""
    agent, hparams, steps = SETTINGS[algo]
    exp = Experiment(
        algo=algo,
        env="social/stag_hunt-v0",
        seeds=seeds,
        train=TrainConfig(num_envs=16, rollout_len=10, total_env_steps=steps),
        agent={"parameter_mode": mode, **agent},
        hparams=hparams,
        out_dir=out,
        checkpoint=False,
    )
    result = run_experiment(exp, progress=False)
    built = build(exp)
    hparams = jax.tree.map(lambda x: x[0], built.hparams)
    agent_states = jax.tree.map(lambda x: x[0], result.state.agent_state)  # [S, ...]
    greedy = algo == "iql"  # IPPO: the stochastic policies; IQL: argmax Q

    def evaluate(agent_state, k):
        env, params = built.env, built.env_params
        return evaluate_policy(
            env, params, built.agent, agent_state, hparams, k, wrap=SocialMetrics, greedy=greedy
        )

    metrics = jax.jit(jax.vmap(evaluate))(agent_states, jax.random.split(key, seeds))
    rates = np.asarray(metrics["social/cooperation_rate"])
    mean, low, high = bootstrap_ci(key, rates)
    print(
        f"{algo} {mode:>11}: cooperation rate {mean:.3f} [95% CI {low:.3f}, {high:.3f}] over {seeds} "
        f"seeds; efficiency {np.mean(metrics['social/efficiency']):.3f} (max 4)"
    )
    print(f"{'':>11}  per seed: {' '.join(f'{r:.2f}' for r in rates)}  ({result.run_dir})")
    efficiency = np.asarray(metrics["social/efficiency"])
    return {"algo": algo, "parameter_mode": mode,
            "per_seed": {"cooperation_rate": rates, "efficiency": efficiency}}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", default="ippo", choices=sorted(SETTINGS), help="learner")
    parser.add_argument("--seeds", type=int, default=64, help="number of seeds per mode")
    parser.add_argument("--out", default="runs", help="parent folder of the run directories")
    parser.add_argument("--results", help="write both modes' per-seed rates here (JSON)")
    args = parser.parse_args(argv)
    modes = ("shared", "independent")
    rows = [run_mode(args.algo, m, args.seeds, args.out, jax.random.PRNGKey(2026)) for m in modes]
    if args.results:
        agent, hparams, steps = SETTINGS[args.algo]
        config = {"algo": args.algo, "env": "social/stag_hunt-v0", "seeds": args.seeds,
                  "parameter_mode": list(modes), "num_envs": 16, "rollout_len": 10,
                  "total_env_steps": steps, "agent": agent, "hparams": hparams,
                  "evaluation": "greedy" if args.algo == "iql" else "stochastic"}  # fmt: skip
        write_results(args.results, "baselines/shared_vs_independent_dilemma.py", config, rows)


if __name__ == "__main__":
    main()
