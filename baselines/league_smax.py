"""SMAX 3m: a league-trained team against the team trained on the heuristic enemy, in cross-play.

Two MAPPO teams with the same configuration (JaxMARL's SMAX MAPPO, the benchmark suite's cell
`smax/3m:mappo`) and budget:

- **heuristic**: trained as the allies against JaxMARL's heuristic enemy (`smax/3m-v0`), the
  benchmark's setting (`marljax benchmark --tasks smax/3m --algos mappo`; pass its run
  directory with `--heuristic-run`, or it is trained here);
- **league**: trained with `marljax train --league pfsp` on `smax/3m-v0 --set env.enemy=learned`
  (both teams are agents; the learner plays the allies against its own snapshots as enemies).

Then, per seed, each team plays the other in the two-sided env (64 episodes per pairing,
sampled actions; a win is the higher team return, draws 1/2), with sides drawn per episode and
with the row team always on the allies' side; and both play the heuristic enemy (its
`task/win_rate`, the battle won).

    python baselines/league_smax.py [--heuristic-run RUN] [--steps 491520] [--seeds 5]
        [--results baselines/results/league_smax.json]
"""

import argparse

import jax
import jax.numpy as jnp
import numpy as np

from marljax.agents import algo_spec
from marljax.benchmarks.suite import cell, experiment_kwargs
from marljax.evaluation.rollout import evaluate_policy
from marljax.population.league import LeagueState, TeamView, league_teams
from marljax.population.league_eval import league_crossplay
from marljax.shell.experiment import Experiment, build, run_experiment
from marljax.shell.policy import load_policy
from marljax.shell.result_files import mean_ci, write_results


def pool_state(pools):
    """A `LeagueState` holding `pools` (leaves `[S, K, ...]`) for `league_crossplay`."""
    runs, num = jax.tree.leaves(pools)[0].shape[:2]
    zeros = jnp.zeros((runs, num))
    return LeagueState(
        learner=jax.tree.map(lambda x: x[:, 0], pools), pool=pools,
        filled=jnp.ones((runs, num), bool), newest=jnp.zeros((runs,), jnp.int32),
        age=jnp.tile(jnp.arange(num, dtype=jnp.int32), (runs, 1)), wins=zeros, games=zeros,
        payoffs=jnp.full((runs, num, num), 0.5), weights=zeros + 1.0 / num,
        running=jnp.zeros((runs, 1)), updates=jnp.zeros((runs,), jnp.int32),
    )  # fmt: skip


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heuristic-run", default=None, help="run directory of the heuristic team")
    parser.add_argument("--steps", type=int, default=491_520)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--capacity", type=int, default=4)
    parser.add_argument("--interval", type=int, default=6, help="updates between snapshots")
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--out", default="runs")
    parser.add_argument("--results", default=None, help="write the per-seed outcomes here (JSON)")
    args = parser.parse_args(argv)
    base = experiment_kwargs(cell("smax/3m", "mappo"), args.steps)
    base.pop("metric")
    run_dir = args.heuristic_run
    if run_dir is None:
        heuristic = Experiment(**base, seeds=args.seeds, out_dir=args.out, name="smax3m_heuristic")
        run_dir = run_experiment(heuristic, progress=False).run_dir
    league = Experiment(
        **{**base, "env_kwargs": {"enemy": "learned"}}, seeds=args.seeds, out_dir=args.out,
        name="smax3m_league", league={"rule": "pfsp", "capacity": args.capacity,
                                      "snapshot_interval": args.interval},
    )  # fmt: skip
    trained = run_experiment(league, progress=False)
    built = build(league)
    env, params = built.env, built.env_params
    teams = league_teams(env)
    agent = algo_spec("mappo").factory(built.agent_config, TeamView(env, teams[0]), params)
    heuristic = [load_policy(run_dir, seed=s).agent_state for s in range(args.seeds)]
    heuristic = jax.tree.map(lambda *x: jnp.stack(x), *heuristic)  # [S, ...]
    learned = jax.tree.map(lambda x: jnp.asarray(x[0]), trained.state.agent_state.learner)
    pools = jax.tree.map(lambda a, b: jnp.stack([a, b], axis=1), heuristic, learned)  # [S, 2]
    out = league_crossplay(agent, pool_state(pools), env, params, jax.random.PRNGKey(0),
                           teams, num_envs=args.episodes, num_steps=100)  # fmt: skip
    win = np.asarray(out["win_rate"])  # [S, 2, 2]: row team against column team, sides drawn
    first = league_crossplay(
        agent,
        pool_state(pools),
        env,
        params,
        jax.random.PRNGKey(2),
        teams,
        num_envs=args.episodes,
        num_steps=100,
        sides="first",
    )["win_rate"]
    first = np.asarray(first)  # the row team always on the allies' side
    h_env, h_params = load_policy(run_dir).env, load_policy(run_dir).env_params
    h_agent = algo_spec("mappo").factory(built.agent_config, h_env, h_params)
    hp = jax.tree.map(lambda x: jnp.asarray(x)[0], built.hparams)

    def against_heuristic(state, key):
        return evaluate_policy(h_env, h_params, h_agent, state, hp, key, num_envs=args.episodes,
                               num_steps=100, greedy=False)["task/win_rate"]  # fmt: skip

    keys = jax.random.split(jax.random.PRNGKey(1), args.seeds)
    vs_h = {name: np.asarray(jax.jit(jax.vmap(against_heuristic))(s, keys))
            for name, s in (("heuristic", heuristic), ("league", learned))}  # fmt: skip
    rows = [{
        "condition": "cross-play",
        "per_seed": {
            "league_vs_heuristic_team": win[:, 1, 0],
            "heuristic_team_vs_league": win[:, 0, 1],
            "league_vs_league": win[:, 1, 1],
            "heuristic_team_vs_heuristic_team": win[:, 0, 0],
            "league_vs_heuristic_team_as_allies": first[:, 1, 0],
            "heuristic_team_vs_league_as_allies": first[:, 0, 1],
            "heuristic_team_vs_heuristic_enemy": vs_h["heuristic"],
            "league_vs_heuristic_enemy": vs_h["league"],
        },
    }]  # fmt: skip
    for name, v in rows[0]["per_seed"].items():
        mean, low, high = mean_ci(np.asarray(v))
        print(f"{name:>38}: {mean:.3f} [{low:.3f}, {high:.3f}]")
    if args.results:
        config = {**{k: v for k, v in base.items() if k != "train"}, "train": base["train"],
                  "seeds": args.seeds, "capacity": args.capacity, "interval": args.interval,
                  "episodes": args.episodes, "heuristic_run": run_dir,
                  "parameter_mode": base["agent"]["parameter_mode"]}  # fmt: skip
        write_results(args.results, "baselines/league_smax.py", config, rows, argv)


if __name__ == "__main__":
    main()
