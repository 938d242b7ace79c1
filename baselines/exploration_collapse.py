"""Exploration vs cooperation of shared-policy DQN on the spatial Prisoner's Dilemma.

Reproduces, at small scale, the setting of Weng & Lee, "How Exploration Breaks Cooperation in
Shared-Policy Multi-Agent Reinforcement Learning" (arXiv 2601.05509, 2026): independent DQN
learners (`--algo iql`: the value-based learner without a mixer, epsilon-greedy, replay, target
network) on an `L x L` torus of Prisoner's Dilemma players with von Neumann neighbourhoods and
local observations (`social/spatial_pd-v0`). Their claim: with parameters shared by all agents,
cooperation collapses as exploration grows, worst at high temptation `D_r`; limiting sharing
(groups, independent parameters) alleviates it.

For each temptation `T = 1 + D_r`, Q-network width (`--hidden`, one hidden layer) and
`parameter_mode` (shared, shared_id = shared + one-hot agent id, independent, grouped = `--groups`
parameter sets, each shared by a block of `A / G` agents, i.e. bands of lattice rows), one program
trains every (exploration schedule x seed) run: epsilon anneals linearly from 1 to its final value
(`--eps`) over the first `--anneal` fraction of training (a third by default), then stays there. The trained greedy policies (argmax Q) are then
evaluated and the cooperation rate (fraction of cooperative choices,
`marljax.evaluation.social`) is reported per cell with a bootstrap 95% CI, together with
`P(mode > shared)` (probability of improvement over seeds, with its CI) for every other mode.

    python baselines/exploration_collapse.py [--side 6] [--seeds 16] [--eps 0.02 0.1 0.3]
        [--temptation 1.25 1.5] [--hidden 32] [--modes shared shared_id independent grouped]
        [--groups 6] [--anneal 0.333] [--steps 6000] [--out runs]
        [--results baselines/results/exploration_collapse.json]
`--results` writes every cell's per-seed greedy cooperation rate for the generated tables.

At 64 seeds x 2 epsilons per program, one program took 3.4 to 5.8 minutes at hidden 16 and 64
and 8.3 (shared) to 9.6 (independent) minutes at hidden 256 on a loaded 2-core CPU; raise `--side`, `--seeds` and `--steps` for runs closer to the paper's (30x30 and larger
lattices). Measured numbers: `baselines/README.md`.
"""

import argparse
import itertools
import time

import jax
import numpy as np

import marljax.envs.social  # noqa: F401  (registers social/*)
from marljax.evaluation.rollout import evaluate_policy
from marljax.evaluation.social import SocialMetrics, bootstrap_ci
from marljax.evaluation.stats import probability_of_improvement_ci
from marljax.shell.experiment import Experiment, build, run_experiment
from marljax.shell.result_files import write_results
from marljax.training.train import TrainConfig

MODES = ("shared", "shared_id", "independent", "grouped")
ROUNDS = 10  # rounds per episode; also the replay sequence length


def train_and_evaluate(
    args, mode: str, temptation: float, hidden: int, key: jax.Array
) -> np.ndarray:
    """Train `anneal x eps x seeds` runs in one program; `[len(anneal), len(eps), S]` cooperation
    rates."""
    exp = Experiment(
        algo="iql",
        env="social/spatial_pd-v0",
        env_kwargs={"side": args.side, "temptation": temptation, "num_rounds": ROUNDS},
        seeds=args.seeds,
        train=TrainConfig(num_envs=2, rollout_len=ROUNDS, total_env_steps=args.steps),
        agent={
            "parameter_mode": mode,
            "num_groups": args.groups if mode == "grouped" else 1,
            "recurrent": False,
            "hidden_sizes": (hidden,),
            "sequence_len": ROUNDS,
            "batch_size": 16,
            "buffer_size": 200,
            "target": "one_step",
            "double_q": False,
            "target_update_interval": 50,
        },
        hparams={"lr": 3e-3, "gamma": 0.9},
        # first name slowest: setting g = anneal index * len(eps) + eps index
        grid={
            "eps_anneal_steps": [f * args.steps for f in args.anneal],
            "eps_finish": list(args.eps),
        },
        out_dir=args.out,
        checkpoint=False,
    )
    result = run_experiment(exp, progress=False)
    built = build(exp)
    G, S = len(built.settings), args.seeds
    order = [(s["eps_anneal_steps"], s["eps_finish"]) for s in built.settings]
    expected = [(f * args.steps, e) for f in args.anneal for e in args.eps]
    assert np.allclose(order, expected, rtol=1e-6), (order, expected)
    flat = lambda x: x.reshape(G * S, *x.shape[2:])  # noqa: E731
    agent_states = jax.tree.map(lambda x: flat(np.asarray(x)), result.state.agent_state)
    hparams = jax.tree.map(lambda x: x[0], built.hparams)  # greedy acting ignores epsilon

    def evaluate(agent_state, k):
        return evaluate_policy(
            built.env,
            built.env_params,
            built.agent,
            agent_state,
            hparams,
            k,
            num_envs=4,
            num_steps=2 * ROUNDS,
            wrap=SocialMetrics,
            greedy=True,
        )

    keys = jax.random.split(key, G * S)
    metrics = jax.jit(jax.vmap(evaluate))(agent_states, keys)
    rates = np.asarray(metrics["social/cooperation_rate"])
    return rates.reshape(len(args.anneal), len(args.eps), S)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=6, help="lattice side L (A = L*L agents)")
    parser.add_argument("--seeds", type=int, default=16, help="seeds per cell")
    parser.add_argument("--eps", type=float, nargs="+", default=[0.02, 0.1, 0.3])
    parser.add_argument("--temptation", type=float, nargs="+", default=[1.25, 1.5])
    parser.add_argument("--hidden", type=int, nargs="+", default=[32], help="Q-network widths")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--groups", type=int, default=6, help="parameter sets of `grouped`")
    parser.add_argument(
        "--anneal",
        type=float,
        nargs="+",
        default=[1 / 3],
        help="fractions of training over which epsilon anneals to its final value",
    )
    parser.add_argument("--steps", type=int, default=6000, help="env steps per run")
    parser.add_argument("--out", default="runs", help="parent folder of the run directories")
    parser.add_argument("--results", help="write every cell's per-seed cooperation (JSON)")
    args = parser.parse_args(argv)
    key = jax.random.PRNGKey(2026)
    rows = []
    print(
        f"spatial PD {args.side}x{args.side} ({args.side**2} agents), S = -0.25, {args.steps} env "
        f"steps per run, {args.seeds} seeds per cell; greedy cooperation rate [bootstrap 95% CI]"
    )
    for temptation in args.temptation:
        for hidden in args.hidden:
            rates = {}
            for mode in args.modes:
                t0 = time.time()
                rates[mode] = train_and_evaluate(args, mode, temptation, hidden, key)
                means = " ".join(f"{r:.3f}" for r in rates[mode].mean(axis=-1).ravel())
                print(
                    f"  (T = {temptation}, hidden {hidden}, {mode}: {time.time() - t0:.0f} s; "
                    f"mean per (anneal, epsilon) {means})",
                    flush=True,
                )
            for (a, anneal), (g, eps) in itertools.product(
                enumerate(args.anneal), enumerate(args.eps)
            ):
                cells = []
                for mode in args.modes:
                    rows.append({"temptation": temptation, "hidden": hidden, "mode": mode,
                                 "anneal": anneal, "eps": eps,
                                 "per_seed": {"cooperation": rates[mode][a, g]}})  # fmt: skip
                    mean, low, high = bootstrap_ci(key, rates[mode][a, g])
                    cells.append(f"{mode} {mean:.3f} [{low:.3f}, {high:.3f}]")
                others = [m for m in args.modes if m != "shared"] if "shared" in args.modes else []
                for mode in others:
                    poi = probability_of_improvement_ci(
                        key, rates[mode][a, g][:, None], rates["shared"][a, g][:, None]
                    )
                    cells.append(
                        f"P({mode} > shared) {float(poi.point):.2f} "
                        f"[{float(poi.low):.2f}, {float(poi.high):.2f}]"
                    )
                print(
                    f"T = {temptation:<5} hidden {hidden:<4} anneal {anneal:.2f} eps = {eps:<5} "
                    + " | ".join(cells),
                    flush=True,
                )
    if args.results:
        config = {"algo": "iql", "env": "social/spatial_pd-v0", "side": args.side,
                  "agents": args.side**2, "seeds": args.seeds, "env_steps_per_seed": args.steps,
                  "rounds": ROUNDS, "groups": args.groups, "lr": 3e-3, "gamma": 0.9,
                  "evaluation": "greedy, 4 envs x 20 steps"}  # fmt: skip
        write_results(args.results, "baselines/exploration_collapse.py", config, rows)


if __name__ == "__main__":
    main()
