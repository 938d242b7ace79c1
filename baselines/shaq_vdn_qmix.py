"""SHAQ vs VDN vs QMIX on a non-monotonic matrix game and on MPE simple spread: IQM over seeds.

SHAQ (J. Wang et al., "SHAQ: Incorporating Shapley Value Theory into Multi-Agent Q-Learning",
NeurIPS 2022) weighs each agent's utility by 1 at its greedy action and by a learned
`alpha >= 1` (a Monte Carlo estimate over sampled coalition orders) elsewhere. The three learners
share everything but what defines them (the value-based learner of `marljax.agents.qlearning`):

- `matrix`: `matrix/nonmonotonic-v0` (common payoff [[8, -12, -12], [-12, 0, 0], [-12, 0, 0]],
  optimum (0, 0) worth 8), feed-forward agents (hidden 32, shared with agent ids), 1-step
  double-Q targets, batch 16, buffer 200, target copy every 50 gradient steps, Adam lr 5e-3,
  gamma 1, epsilon 1 -> 0.05 over the first half, 8 envs x 1 step per update. Score: the payoff
  of each seed's greedy joint action (each agent's argmax).
- `spread`: `particle/simple_spread-v0` (3 agents, 25-step episodes) with JaxMARL's
  `shaq_mpe.yaml` settings for all three (SHAQ's `jaxmarl` preset: GRU agents 64 with shared
  parameters, whole episodes of 25 steps, batch 32, buffer 5000, TD(0.6), Adam lr 5e-3, eps
  1e-3, grad clip 25, gamma 0.9, target copy every 200 updates, team reward the sum), 8 envs,
  epsilon 1 -> 0.05 over the first half of a small budget. Score: mean team return (sum over
  agents) of the training episodes of the last 10% of updates.

Aggregates: IQM and mean with 95% stratified-bootstrap intervals (R. Agarwal et al., NeurIPS
2021; `marljax.evaluation.stats`). Every seed of one algorithm trains in one compiled program.

    python baselines/shaq_vdn_qmix.py [--task matrix spread] [--seeds 8] [--spread-steps 60000]
        [--results baselines/results/shaq_vdn_qmix.json]

`--results` writes every algorithm's per-seed scores per task for the generated tables.
"""

from __future__ import annotations

import argparse
import functools
import time

import jax
import numpy as np

from marljax.agents.qlearning import first_step_q_table
from marljax.agents.shaq import preset as shaq_preset
from marljax.evaluation import stats
from marljax.shell.experiment import Experiment, build, final_returns, run_experiment
from marljax.shell.result_files import write_results
from marljax.training.train import TrainConfig

print = functools.partial(print, flush=True)  # noqa: A001  (progress shows when piped)
ALGOS = ("shaq", "vdn", "qmix")
MATRIX_ENV = "matrix/nonmonotonic-v0"
MATRIX_AGENT = dict(
    recurrent=False, hidden_sizes=(32,), parameter_mode="shared_id", batch_size=16,
    buffer_size=200, sequence_len=1, target="one_step", target_update_interval=50,
    optimizer="adam",
)  # fmt: skip
SPREAD_ENV = "particle/simple_spread-v0"


def _run(algo: str, env: str, agent: dict, hparams: dict, train: TrainConfig, seeds: int):
    exp = Experiment(algo=algo, env=env, seeds=seeds, train=train, agent=agent, hparams=hparams,
                     out_dir="runs", checkpoint=False)  # fmt: skip
    t0 = time.perf_counter()
    result = run_experiment(exp, progress=False)
    return exp, result, time.perf_counter() - t0


def matrix_scores(algo: str, seeds: int, updates: int) -> np.ndarray:
    """`[S]` payoffs of each seed's greedy joint action on the non-monotonic game."""
    agent = dict(MATRIX_AGENT, **({"team_reward": "mean"} if algo == "shaq" else {}))
    hp = {"lr": 5e-3, "gamma": 1.0, "eps_finish": 0.05, "eps_anneal_steps": 8 * updates / 2}
    train = TrainConfig(num_envs=8, rollout_len=1, total_env_steps=8 * updates)
    exp, result, wall = _run(algo, MATRIX_ENV, agent, hp, train, seeds)
    built = build(exp)
    payoff = np.asarray(built.env_params.payoffs[0])
    out = []
    for s in range(seeds):
        state = jax.tree.map(lambda x, s=s: x[0, s], result.state.agent_state)
        table = first_step_q_table(built.agent_config, built.env, state, built.env_params)
        out.append(payoff[tuple(int(a) for a in np.argmax(table["q"], axis=1))])
    print(f"matrix {algo}: greedy payoffs {out} ({wall:.0f} s)")
    return {"greedy_payoff": np.asarray(out, np.float32)}


def spread_scores(algo: str, seeds: int, steps: int) -> np.ndarray:
    """`[S]` mean team return of the last 10% of updates' training episodes on simple spread."""
    config, hp = shaq_preset("jaxmarl")
    if algo != "shaq":  # the same learner settings without SHAQ's own fields
        for k in ("sample_size", "manual_alpha", "mixer_init_scale"):
            config.pop(k)
    hparams = {k: float(getattr(hp, k)) for k in
               ("lr", "opt_eps", "gamma", "td_lambda", "max_grad_norm", "eps_finish")}  # fmt: skip
    hparams["eps_anneal_steps"] = steps / 2
    train = TrainConfig(num_envs=8, rollout_len=25, total_env_steps=steps, eval_interval=0)
    _, result, wall = _run(algo, SPREAD_ENV, config, hparams, train, seeds)
    ret = np.asarray(result.metrics["episode_return"])[0] * 3  # [S, U], team return
    tail = max(1, ret.shape[1] // 10)
    scores = np.nanmean(ret[:, -tail:], axis=1)
    first = np.nanmean(ret[:, :tail], axis=1)
    print(f"spread {algo}: first 10% {np.round(first, 1).tolist()} -> last 10% "
          f"{np.round(scores, 1).tolist()} ({wall:.0f} s; final_returns "
          f"{np.round(final_returns(result.metrics)[0] * 3, 1).tolist()})")  # fmt: skip
    return {"team_return_last10": scores, "team_return_first10": first}


def report(task: str, per_algo: dict[str, dict[str, np.ndarray]]) -> list[dict]:
    """Print the aggregates of each algorithm's score (its first metric); return result rows."""
    scores = {a: next(iter(m.values())) for a, m in per_algo.items()}
    agg = stats.aggregate_metrics(
        jax.random.PRNGKey(0), {k: v[:, None] for k, v in scores.items()}, ("iqm", "mean")
    )
    for name, res in agg.items():
        for metric, iv in res.items():
            print(f"{task:6s} {name:5s} {metric:4s} {float(iv.point):8.2f}  95% CI "
                  f"[{float(iv.low):.2f}, {float(iv.high):.2f}]")  # fmt: skip
    for other in ALGOS[1:]:
        poi = stats.probability_of_improvement_ci(
            jax.random.PRNGKey(1), scores["shaq"][:, None], scores[other][:, None]
        )
        print(f"{task:6s} P(SHAQ > {other.upper()}) = {float(poi.point):.2f}  95% CI "
              f"[{float(poi.low):.2f}, {float(poi.high):.2f}]")  # fmt: skip
    return [{"task": task, "algo": a, "per_seed": m} for a, m in per_algo.items()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", nargs="+", default=["matrix", "spread"])
    parser.add_argument("--seeds", type=int, default=8, help="seeds per algorithm")
    parser.add_argument("--matrix-updates", type=int, default=300, help="8 env steps each")
    parser.add_argument("--spread-steps", type=int, default=60_000, help="env steps per seed")
    parser.add_argument("--results", help="write every algorithm's per-seed scores (JSON)")
    args = parser.parse_args(argv)
    rows = []
    if "matrix" in args.task:
        rows += report(
            "matrix", {a: matrix_scores(a, args.seeds, args.matrix_updates) for a in ALGOS}
        )
    if "spread" in args.task:
        rows += report(
            "spread", {a: spread_scores(a, args.seeds, args.spread_steps) for a in ALGOS}
        )
    if args.results:
        modes = {"matrix": "shared_id", "spread": "shared (the jaxmarl preset)"}
        config = {"seeds": args.seeds, "tasks": args.task, "matrix_env": MATRIX_ENV,
                  "matrix_agent": MATRIX_AGENT, "matrix_updates": args.matrix_updates,
                  "matrix_env_steps_per_seed": 8 * args.matrix_updates, "spread_env": SPREAD_ENV,
                  "spread_env_steps_per_seed": args.spread_steps, "spread_preset": "jaxmarl",
                  "parameter_mode": {t: modes[t] for t in args.task}}  # fmt: skip
        write_results(args.results, "baselines/shaq_vdn_qmix.py", config, rows)


if __name__ == "__main__":
    main()
