"""GRU IPPO trained against a pool of scripted co-players in the iterated Prisoner's Dilemma, then cross-played.

The setting of Weis et al., "Multi-agent cooperation through in-context co-player inference"
(arXiv:2602.16301, 2026): a sequence-model agent meets, each episode, a co-player drawn from a
diverse pool (here always-cooperate, always-defect, tit-for-tat, grim trigger, win-stay
lose-shift, random; uniform), so it must infer in context whom it plays. Afterwards every
trained seed plays every other seed (greedy) in the two-player game: mutual cooperation earns
3 per round, mutual defection 1. `--mlp` trains a feed-forward policy on the last joint action
instead (no memory beyond one round), the paper's no-sequence-model control. `--snapshots`
trains a second generation against the pool plus the first generation's 8 trained seeds as
frozen co-players (14 members, uniform), and evaluates that generation. `--mixed SHARE`
trains against a mixed pool instead: each episode's co-player is one of the pool's strategies
with probability SHARE, otherwise the learner itself (a league, `make_league` with rule `self`
and the strategies as fixed members, the learner's seat drawn per episode), so learners meet
learners as well as fixed strategies.

    python baselines/coplayer_pool_ipd.py                 # 8 seeds, GRU
    python baselines/coplayer_pool_ipd.py --mlp           # 8 seeds, feed-forward
    python baselines/coplayer_pool_ipd.py --snapshots     # + a generation vs pool and snapshots
    python baselines/coplayer_pool_ipd.py --mixed 0.5     # half learners, half the pool
    python baselines/coplayer_pool_ipd.py --mixed 0.5 --pool random_memory_one  # tabular pool
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

import marljax
from marljax.agents import PPOConfig, PPOHParams, algo_spec
from marljax.envs.matrix import strategies
from marljax.envs.matrix.coplayers import ScriptedCoPlayers
from marljax.evaluation.rollout import evaluate_policy
from marljax.population.league import LeagueConfig, TeamView, make_league
from marljax.population.pool import agent_strategy, make_pool_training, pool_crossplay
from marljax.shell.result_files import write_results
from marljax.training.train import TrainConfig, make_train

POOL = ("always_cooperate", "always_defect", "tit_for_tat", "grim_trigger")
POOL += ("win_stay_lose_shift", "random")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=8)
    p.add_argument("--updates", type=int, default=1500)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--mlp", action="store_true", help="feed-forward policy instead of a GRU")
    p.add_argument(
        "--snapshots",
        action="store_true",
        help="train a second generation against the pool plus the first generation's seeds",
    )
    p.add_argument(
        "--mixed",
        type=float,
        default=None,
        metavar="SHARE",
        help="a mixed pool: the pool's strategies in SHARE of the episodes, else the learner",
    )
    p.add_argument(
        "--pool",
        default=",".join(POOL),
        help="the training pool's strategies (marljax.envs.matrix.strategies; default the six "
        "evaluated against)",
    )
    p.add_argument("--results", help="write the per-seed results here (JSON)")
    args = p.parse_args()

    game, params = marljax.make("matrix/ipd-v0", num_rounds=args.rounds)
    agent_config = PPOConfig(
        critic_input="local", recurrent=not args.mlp, gru_size=32, hidden_sizes=(32,)
    )
    train = TrainConfig(
        num_envs=32, rollout_len=args.rounds, total_env_steps=32 * args.rounds * args.updates
    )
    names = tuple(args.pool.split(","))
    pool = [strategies.get_strategy(name) for name in names]
    hp = PPOHParams(lr=args.lr)
    start = time.perf_counter()

    def train_against(pool, key):
        """`(agent, its trained states [S, ...], metrics)` of the seeds trained against `pool`."""
        keys = jax.random.split(key, args.seeds)
        if args.mixed is None:
            built = make_pool_training(game, pool, train, "ippo", agent_config, params)
            agent, trainer = built.agent, built.trainer
        else:
            agent = algo_spec("ippo").factory(agent_config, TeamView(game, (0,)), params)
            config = LeagueConfig(rule="self", capacity=1, fixed_share=args.mixed,
                                  num_envs=train.num_envs)  # fmt: skip
            trainer = make_train(train, game, make_league(agent, game, config, fixed=pool), params)
        states, metrics = jax.jit(jax.vmap(trainer.train, in_axes=(0, None)))(keys, hp)
        states = states.agent_state if args.mixed is None else states.agent_state.learner
        return agent, jax.block_until_ready(states), metrics

    agent, agents, metrics = train_against(pool, jax.random.PRNGKey(0))
    if args.snapshots:  # the first generation's seeds join the pool as frozen co-players
        seed = [jax.tree.map(lambda x, i=i: x[i], agents) for i in range(args.seeds)]
        pool = pool + [agent_strategy(game, params, agent, s, hp) for s in seed]
        agent, agents, metrics = train_against(pool, jax.random.PRNGKey(1))
    seconds = time.perf_counter() - start
    curve = np.asarray(metrics["episode_return"]).mean(0)
    print(
        f"trained {args.seeds} seeds in {seconds:.0f} s (incl. compile); training return "
        f"first / last 10 updates {curve[:10].mean():.2f} / {curve[-10:].mean():.2f}"
    )
    per_seed = {}
    for name in POOL:  # each seed against each named strategy alone, greedy, per-round reward
        env = ScriptedCoPlayers(game, {1: strategies.get_strategy(name)})
        run = jax.vmap(
            lambda s, k, env=env: evaluate_policy(env, params, agent, s, hp, k, 16, args.rounds)
        )
        keys = jax.random.split(jax.random.PRNGKey(1), args.seeds)
        ret = np.asarray(jax.jit(run)(agents, keys)["episode_return"]) / args.rounds
        per_seed[f"vs/{name}"] = ret
        print(f"vs {name:<20} reward / round {ret.mean():.2f} (seeds {np.round(ret, 2)})")
    table = (
        np.asarray(
            pool_crossplay(game, params, agent, agents, hp, jax.random.PRNGKey(2), args.rounds)
        ).mean(-1)
        / args.rounds
    )  # [S, S] reward per round, mean of both seats
    off = ~np.eye(args.seeds, dtype=bool)
    # per seed: its mean against every other seed, and its share of cooperating pairs (>= 2.5)
    per_seed["crossplay"] = np.where(off, table, 0.0).sum(1) / (args.seeds - 1)
    per_seed["cooperating_pairs"] = np.where(off, table >= 2.5, False).sum(1) / (args.seeds - 1)
    per_seed["selfplay"] = np.diag(table)
    cross = table[off]
    print(
        f"cross-play (different seeds) reward / round {cross.mean():.2f}, pairs >= 2.5: "
        f"{(cross >= 2.5).mean():.0%}; same seed twice {np.diag(table).mean():.2f}; "
        "mutual cooperation 3, mutual defection 1"
    )
    print(np.round(table, 2))
    if args.results:
        pool_kind = "fixed" if args.mixed is None else f"mixed {args.mixed:g}"
        config = {"env": "matrix/ipd-v0", "num_rounds": args.rounds, "algo": "ippo",
                  "policy": "feed-forward 32" if args.mlp else "GRU 32",
                  "parameter_mode": agent_config.parameter_mode, "lr": args.lr,
                  "num_envs": train.num_envs, "updates": args.updates, "seeds": args.seeds,
                  "pool": list(names), "pool_kind": pool_kind, "snapshots": args.snapshots,
                  "eval": "greedy, 16 episodes per strategy and seed; every pair of seeds",
                  "train_seconds_incl_compile": round(seconds, 1)}  # fmt: skip
        row = {"policy": config["policy"], "pool": pool_kind, "strategies": list(names),
               "table": table.tolist(),
               "per_seed": per_seed}  # fmt: skip
        write_results(args.results, "baselines/coplayer_pool_ipd.py", config, [row])


if __name__ == "__main__":
    main()
