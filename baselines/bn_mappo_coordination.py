"""BN-MAPPO vs MAPPO on one-shot coordination games with several equal optima and a safe action.

Games (`--env`):
- `matrix/bn_coordination_3p-v0` (registered here): 3 agents, 3 actions, common payoff 1 when
  all agents play the same action 0 or 1 (two equal optima), else 0.6 x (fraction of agents
  playing the safe action 2): `marljax.agents.bn_tabular.coordination_game(3, 3, 0.6)`, the game
  of `bn_tabular_coordination.py`;
- `matrix/penalty_k100-v0`, `matrix/penalty_k25-v0`: the penalty game of C. Claus and
  C. Boutilier (AAAI 1998): optima (0, 2) = (2, 0) = 10, miscoordination (0, 0) = (2, 2) = -k,
  safe equilibrium (1, 1) = 2. Here the second agent must play the *other* extreme action than
  the first, which a child in the graph can learn as easily as copying.

Independent learners (MAPPO) tend to flee to the safe action while the partners still explore;
a Bayesian-network joint policy (D. Chen et al., "Context-Aware Bayesian Network Actor-Critic
Methods for Cooperative Multi-Agent Reinforcement Learning", ICML 2023) lets agents see their
parents' actions and respond to them (copy them, in the coordination game). We compare MAPPO,
BN-MAPPO on the fixed chain and full graphs, on a learned context-aware graph (started near the full
graph in index order, the default, or near-uniform: random order, edges at probability 1/2), and
on the learned graph with its edge threshold annealed to 1 (a fully independent final policy),
with IQM and 95%
stratified-bootstrap CIs over seeds (`marljax.evaluation.stats`), and draw the learned graph of
a few seeds (a one-shot game has a single context, its initial state).

    python baselines/bn_mappo_coordination.py [--env ID] [--seeds 8] [--ent-coef C] [--out DIR]
        [--results baselines/results/bn_mappo_<game>.json]

`--results` writes every variant's per-seed final return (and the learned graph's density at the
first and last update) for the generated tables.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from marljax.agents import bn
from marljax.agents import bn_tabular as bt
from marljax.core.registry import register
from marljax.envs.matrix import MatrixGame, payoffs
from marljax.evaluation import stats
from marljax.evaluation.plots import plot_dag, plot_interval_estimates
from marljax.shell.experiment import Experiment, build, final_returns, run_experiment
from marljax.shell.result_files import write_results
from marljax.training.train import TrainConfig

UPDATES = 80
BASE = Experiment(
    algo="mappo",
    env="matrix/penalty_k100-v0",
    train=TrainConfig(num_envs=16, rollout_len=4, total_env_steps=16 * 4 * UPDATES),
    agent={"hidden_sizes": (32,), "num_minibatches": 2},
    hparams={"lr": 3e-3},
    checkpoint=False,
)
VARIANTS = {
    "MAPPO": {"algo": "mappo"},
    "BN-MAPPO (chain graph)": {"algo": "bn_mappo", "agent": {**BASE.agent, "graph": "chain"}},
    "BN-MAPPO (full graph)": {"algo": "bn_mappo", "agent": {**BASE.agent, "graph": "full"}},
    "BN-MAPPO (learned graph)": {"algo": "bn_mappo"},
    "BN-MAPPO (learned graph, uniform start)": {
        "algo": "bn_mappo",
        "agent": {**BASE.agent, "graph_edge_init": 0.5, "graph_order_bias": 0.0},
    },
    "BN-MAPPO (annealed to independent)": {
        "algo": "bn_mappo",
        "agent": {
            **BASE.agent,
            "graph_threshold_end": 1.0,
            "graph_anneal_updates": UPDATES * 3 // 4,
        },
    },
}


OPTIMUM = {"matrix/bn_coordination_3p-v0": 1.0}


def _coordination_3p() -> MatrixGame:
    table = np.asarray(bt.coordination_game(3, 3, 0.6)).reshape(3, 3, 3)
    return MatrixGame(payoffs.common_payoff(table), name="bn_coordination_3p")


register(
    "matrix/bn_coordination_3p-v0",
    _coordination_3p,
    description="3-agent coordination game, two equal optima and a safe action (BN baseline)",
)


def learned_edge_probs(exp: Experiment, result, seed: int, samples: int = 4000) -> np.ndarray:
    """Marginal `[A, A]` edge probabilities of a seed's learned graph at the initial state."""
    built = build(exp)
    params = jax.tree.map(lambda x: x[0, seed], result.state.agent_state.actor_params)
    config = built.agent_config
    _, ts = built.env.reset(jax.random.PRNGKey(0), built.env_params)
    context = jnp.asarray(ts.global_state, jnp.float32).reshape(-1)
    A = built.env.num_agents
    net = bn.GraphNet(
        A,
        config.hidden_sizes,
        config.activation,
        edge_bias=float(np.log(config.graph_edge_init / (1.0 - config.graph_edge_init))),
        order_bias=config.graph_order_bias,
    )
    scores, edge_logits = net.apply(params["graph"], context)
    schedule = bn.AnnealSchedule(
        config.graph_threshold_start, config.graph_threshold_end, config.graph_anneal_updates
    )
    threshold = schedule(exp.train.num_updates)
    keys = jax.random.split(jax.random.PRNGKey(seed), samples)
    dags = jax.vmap(lambda k: bn.sample_dag(k, scores, edge_logits, threshold))(keys)
    return np.asarray(dags.parents.mean(0))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="matrix/bn_coordination_3p-v0")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--ent-coef", type=float, default=0.01, help="entropy coefficient")
    parser.add_argument("--out", default="runs")
    parser.add_argument("--results", help="write every variant's per-seed results (JSON)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    scores, results, exps, rows = {}, {}, {}, []
    best = OPTIMUM.get(args.env, 10.0)
    for name, overrides in VARIANTS.items():
        exp = dataclasses.replace(
            BASE, env=args.env, seeds=args.seeds, out_dir=args.out, **overrides
        )
        exp = dataclasses.replace(exp, hparams={**exp.hparams, "ent_coef": args.ent_coef})
        result = run_experiment(exp, progress=False)
        final = final_returns(result.metrics)[0]  # [S]
        scores[name] = final[:, None]
        results[name], exps[name] = result, exp
        extra, per_seed = "", {"final_return": final}
        if "graph_density" in result.metrics:
            dens = np.asarray(result.metrics["graph_density"])[0]  # [S, U]
            first, last = dens[:, 0].mean(), dens[:, -1].mean()
            extra = f"; graph density first/last update {first:.2f}/{last:.2f}"
            per_seed |= {"graph_density_first": dens[:, 0], "graph_density_last": dens[:, -1]}
        rows.append({"variant": name, "algo": exp.algo, "parameter_mode": "shared_id",
                     "agent": exp.agent, "per_seed": per_seed})  # fmt: skip
        print(
            f"{name}: final returns {np.round(final, 2).tolist()}; "
            f"optimum (>= {0.95 * best:g}) in {int((final >= 0.95 * best).sum())}/{len(final)} "
            f"seeds{extra}"
        )
    agg = stats.aggregate_metrics(
        jax.random.PRNGKey(0), scores, metrics=("iqm", "mean"), num_resamples=2000
    )
    for name, m in agg.items():
        iqm = m["iqm"]
        print(
            f"{name}: IQM {float(iqm.point):.2f} [{float(iqm.low):.2f}, {float(iqm.high):.2f}], "
            f"mean {float(m['mean'].point):.2f}"
        )
    tag = args.env.split("/")[-1]
    if args.results:
        config = {"env": args.env, "optimum": best, "seeds": args.seeds, "updates": UPDATES,
                  "env_steps_per_seed": BASE.train.total_env_steps,
                  "train": dataclasses.asdict(BASE.train),
                  "hparams": {**BASE.hparams, "ent_coef": args.ent_coef},
                  "at_optimum": ">= 0.95 x optimum in the last update's training episodes"}  # fmt: skip
        write_results(args.results, "baselines/bn_mappo_coordination.py", config, rows)
    print(
        "plots:",
        plot_interval_estimates(agg, out / f"bn_mappo_{tag}_iqm.png", xlabel="final return"),
    )
    name = "BN-MAPPO (learned graph)"
    shown = list(range(min(4, args.seeds)))
    probs = np.stack([learned_edge_probs(exps[name], results[name], s) for s in shown])
    for s, p in zip(shown, probs, strict=True):
        edges = ", ".join(
            f"P({j}->{i}) = {p[i, j]:.2f}" for i in range(len(p)) for j in range(len(p)) if i != j
        )
        print(f"learned graph, seed {s}: {edges}")
    print(
        "      ",
        plot_dag(
            probs,
            out / f"bn_mappo_{tag}_learned_graphs.png",
            titles=[f"seed {s}, initial state" for s in shown],
            suptitle=f"BN-MAPPO learned graph ({args.env})",
        ),
    )


if __name__ == "__main__":
    main()
