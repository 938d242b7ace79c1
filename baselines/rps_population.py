"""Recurrent IPPO against the RoShamBo competition bots, scored by population-based evaluation.

Lanctot et al. (2023) propose repeated Rock-Paper-Scissors against the 43 competition bots as a
benchmark, in matches of 1000 throws, scoring an agent by its population return (mean return
against a uniformly drawn bot), its within-population exploitability (the best return any bot
earns against it) and their difference, the aggregate score. Here a GRU policy (IPPO,
`recurrent=True`) trains against the ported competition bots of
`marljax.envs.matrix.roshambo` (each episode draws one bot; the agent only sees the previous
joint move, so it must tell the bots apart from their play); then every
trained seed plays every bot in ONE compiled program (`population_returns_over_seeds`), and the
per-bot table and the three metrics are printed with 95 % confidence intervals over seeds. The
seeds train in one program through the experiment engine, into a run directory under `--out`
(checkpoints, config, metrics), so the trained agent loads with `marljax.load_policy(RUN)` and
evaluates with `marljax eval RUN` on its training env.

With `--heldout K`, the last K bots of the population (in the competition's table order, or
those named by `--heldout-bots`, or K drawn at random with `--heldout-random K`) are left out of
training and the metrics are also reported on them alone: how the agent generalises to opponents
it never met.

Training runs on the league view of the population (`matrix/rrps_league-v0`, the default
`--train-env league`): each env plays one match against EVERY training bot at once, one learner
slot per bot, each bot's code running once per step; `--envs` counts league envs, so an update
holds `envs x bots` matches. `--train-env population` trains on `matrix/rrps_population-v0`
instead (one bot drawn per episode; every step runs every bot's code under `vmap`, far slower).
The policy has shared parameters and sees only its own slot, so it plays the population env,
where it is evaluated, unchanged.

`--train-rounds N` trains on matches of N throws against bots built for N-throw matches, which
costs less per throw (several bots do work proportional to the match length on every throw);
evaluation stays on `--rounds` (1000, the paper's protocol). The observation (the last joint
move) does not depend on the match length, so the trained policy plays either.

M. Lanctot et al., "Population-based Evaluation in Repeated Rock-Paper-Scissors as a Benchmark
for Multiagent Reinforcement Learning", TMLR 2023 (arXiv:2303.03196).

    python baselines/rps_population.py [--rounds 1000] [--train-rounds 1000] [--updates 100]
        [--seeds 3] [--envs 4] [--episodes 8] [--train-env league|population]
        [--lr 1e-3] [--ent-coef 0.01] [--gru 64]
        [--heldout 10 | --heldout-bots iocainebot,greenberg | --heldout-random 21]
        [--out runs] [--name NAME] [--results baselines/results/rps_population.json]

`--results` writes the three metrics per seed (all, training and held-out bots), every seed's
mean return against each bot, and the reference bots' metrics, for the generated README row.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import marljax
from marljax.agents import ippo
from marljax.evaluation.population import (
    aggregate_score,
    bot_crosstable,
    crosstable_metrics,
    population_return,
    population_returns_over_seeds,
    within_population_exploitability,
)
from marljax.shell.experiment import Experiment, build, run_experiment
from marljax.shell.result_files import write_results
from marljax.training.train import TrainConfig

REFERENCE_BOTS = ("randbot", "iocainebot", "halbot", "greenberg")


#: 97.5 % quantiles of Student's t for 1..10 degrees of freedom (then about 1.96)
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)


def _ci(values: np.ndarray) -> str:
    """`mean +- half-width` of a 95 % t-interval over seeds (just the mean for one seed)."""
    values = np.asarray(values, np.float64)
    if values.size < 2:
        return f"{values.mean():8.2f}"
    t = T975[values.size - 2] if values.size - 1 <= len(T975) else 1.96
    half = t * values.std(ddof=1) / np.sqrt(values.size)
    return f"{values.mean():8.2f} +- {half:6.2f}"


def _metrics(per_seed_means: np.ndarray) -> dict[str, np.ndarray]:
    """`[S, P]` per-seed mean returns -> each metric per seed `[S]`."""
    r = jnp.asarray(per_seed_means)
    return {
        "PopReturn": np.asarray(population_return(r)),
        "WithinPopExpl": np.asarray(within_population_exploitability(r)),
        "AggScore": np.asarray(aggregate_score(r)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1000, help="throws per match (paper: 1000)")
    parser.add_argument("--updates", type=int, default=100, help="PPO updates per seed")
    parser.add_argument("--envs", type=int, default=4, help="parallel environments")
    parser.add_argument("--seeds", type=int, default=3, help="training seeds (one at a time)")
    parser.add_argument("--episodes", type=int, default=8, help="evaluation matches per bot")
    parser.add_argument("--heldout", type=int, default=0, help="leave the last K bots out")
    parser.add_argument("--heldout-bots", default="", help="comma-separated held-out bots")
    parser.add_argument("--heldout-random", type=int, default=0, help="hold out K random bots")
    parser.add_argument("--train-rounds", type=int, default=0, help="training match length")
    parser.add_argument("--train-env", choices=("league", "population"), default="league")
    parser.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate")
    parser.add_argument("--ent-coef", type=float, default=0.01, help="entropy bonus")
    parser.add_argument("--gru", type=int, default=64, help="GRU (and MLP) width")
    parser.add_argument("--minibatches", type=int, default=4, help="PPO minibatches (over envs)")
    parser.add_argument("--out", default="runs", help="parent folder of the run directory")
    parser.add_argument("--name", default="", help="run directory name (default: generated)")
    parser.add_argument("--results", help="write the per-seed metrics and returns (JSON)")
    args = parser.parse_args()

    env, params = marljax.make(
        "matrix/rrps_population-v0", num_rounds=args.rounds, num_throws=args.rounds
    )
    train_rounds = args.train_rounds or args.rounds
    held = [b for b in args.heldout_bots.split(",") if b] or list(
        env.bots[len(env.bots) - args.heldout :] if args.heldout else []
    )
    if args.heldout_random:
        rng = np.random.default_rng(0)
        held = sorted(rng.choice(env.bots, args.heldout_random, replace=False).tolist())
        print(f"held out (random, rng seed 0): {', '.join(held)}")
    train_bots = [b for b in env.bots if b not in held]
    if args.train_env == "league":
        train_id = "matrix/rrps_league-v0"
        env_kwargs = {"bots": train_bots, "num_rounds": train_rounds, "num_throws": train_rounds}
    else:
        train_id = "matrix/rrps_population-v0"
        weights = [float(b in train_bots) for b in env.bots]
        env_kwargs = {"num_rounds": train_rounds, "num_throws": train_rounds,
                      "bot_weights": weights}  # fmt: skip
    options = dict(
        recurrent=True,
        hidden_sizes=(args.gru,),
        gru_size=args.gru,
        num_minibatches=args.minibatches,
        num_epochs=4,
        parameter_mode="shared",
    )
    # every seed in one program, in a run directory that `load_policy` and `marljax eval` read
    exp = Experiment(
        algo="ippo", env=train_id, env_kwargs=env_kwargs, seeds=args.seeds, agent=options,
        hparams={"lr": args.lr, "gamma": 0.99, "ent_coef": args.ent_coef},
        train=TrainConfig(num_envs=args.envs, rollout_len=train_rounds,
                          total_env_steps=args.envs * train_rounds * args.updates),
        out_dir=args.out, name=args.name or None,
    )  # fmt: skip
    built = build(exp)
    config, train_env = exp.train, built.env
    learner_steps = config.num_updates * config.steps_per_update * train_env.num_agents
    print(
        f"recurrent IPPO (GRU {args.gru}, lr {args.lr}, entropy {args.ent_coef}) on the "
        f"{args.train_env} env vs {len(train_bots)} training bots ({len(held)} held out), "
        f"{train_rounds} throws per training match, {args.rounds} per evaluation match, "
        f"{config.num_updates} updates x {config.steps_per_update} env steps "
        f"({learner_steps} learner steps per seed), {args.seeds} seeds"
    )
    t0 = time.perf_counter()
    result = run_experiment(built)
    returns = np.asarray(result.metrics["episode_return"])[0]  # [S, U]
    seconds = time.perf_counter() - t0
    for seed in range(args.seeds):
        print(f"seed {seed}: training return first/last update {returns[seed, 0]:.1f} / "
              f"{returns[seed, -1]:.1f}")  # fmt: skip
    print(f"{args.seeds * learner_steps / seconds:.0f} learner steps/s incl. compile; run "
          f"directory {result.run_dir} (marljax eval {result.run_dir})")  # fmt: skip
    stacked = jax.tree.map(lambda x: x[0], result.state.agent_state)  # [S, ...]
    # the same parameters play the population env (one learner, no agent id): its own agent
    eval_agent = ippo(env, params, **options)
    hparams = jax.tree.map(lambda x: x[0], built.hparams)

    t0 = time.perf_counter()
    returns = np.asarray(
        population_returns_over_seeds(
            env, eval_agent, stacked, hparams, jax.random.PRNGKey(1000), params, args.episodes
        )
    )  # [S, P, E]
    print(f"evaluation: {returns.shape} returns in {time.perf_counter() - t0:.0f} s incl. compile")
    means = returns.mean(-1)  # [S, P]

    print(f"\nreturn per {args.rounds}-throw match vs each bot (mean over seeds, 95 % CI):")
    for i, name in enumerate(env.bots):
        tag = "  (held out)" if name in held else ""
        print(f"  {name:<16}{_ci(means[:, i])}{tag}")
    groups = {"all bots": list(range(len(env.bots)))}
    if held:
        groups["training bots"] = [i for i, b in enumerate(env.bots) if b not in held]
        groups["held-out bots"] = [i for i, b in enumerate(env.bots) if b in held]
    rows = [{"bot": name, "held_out": name in held, "per_seed": {"return": means[:, i]}}
            for i, name in enumerate(env.bots)]  # fmt: skip
    for label, cols in groups.items():
        m = _metrics(means[:, cols])
        rows.append({"group": label, "bots": len(cols), "per_seed": m})
        print(f"\n{label} ({len(cols)}):")
        for k, v in m.items():
            print(f"  {k:<14}{_ci(v)}")

    table = np.asarray(
        bot_crosstable(
            jax.random.PRNGKey(7),
            env.bots,
            num_episodes=max(1, args.episodes // 4),
            num_rounds=args.rounds,
            row_names=REFERENCE_BOTS,
        )
    )
    ref = {k: np.asarray(v) for k, v in crosstable_metrics(table).items()}
    print(f"\nreference bots vs the same population ({args.rounds} throws):")
    print(f"  {'bot':<14}{'PopReturn':>10}{'WithinExpl':>12}{'AggScore':>10}")
    for i, name in enumerate(REFERENCE_BOTS):
        print(
            f"  {name:<14}{ref['population_return'][i]:10.2f}"
            f"{ref['within_population_exploitability'][i]:12.2f}{ref['aggregate_score'][i]:10.2f}"
        )
    if args.results:
        reference = {name: {k: float(v[i]) for k, v in ref.items()}
                     for i, name in enumerate(REFERENCE_BOTS)}  # fmt: skip
        config = {"algo": "ippo", "parameter_mode": "shared", "agent": options,
                  "train_env": train_id, "train_bots": len(train_bots), "held_out": held,
                  "seeds": args.seeds, "updates": args.updates, "envs": args.envs,
                  "rounds": args.rounds, "train_rounds": train_rounds, "lr": args.lr,
                  "ent_coef": args.ent_coef, "episodes_per_bot": args.episodes,
                  "learner_steps_per_seed": learner_steps, "run_dir": result.run_dir,
                  "reference_bots": reference}  # fmt: skip
        write_results(args.results, "baselines/rps_population.py", config, rows)


if __name__ == "__main__":
    main()
