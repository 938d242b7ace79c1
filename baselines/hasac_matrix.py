"""HASAC vs MASAC on climbing, penalty (k=100) and anti-coordination games: seeds at the optimum.

Games from C. Claus and C. Boutilier, "The dynamics of reinforcement learning in cooperative
multiagent systems", AAAI 1998 (common payoff): climbing `[[11, -30, 0], [-30, 7, 0], [0, 6, 5]]`,
optimum (0, 0) worth 11; penalty k = 100 `[[-100, 0, 10], [0, 2, 0], [10, 0, -100]]`, optima
(0, 2) and (2, 0) worth 10. The sequential scheme is HASAC's (Liu et al. 2024, ICLR), the
simultaneous one MASAC (`SACConfig.sequential=False`); everything else is identical.

A seed "reaches the optimum" when the greedy joint action of its final policies is optimal.
Reported: successes / seeds with a 95% Wilson score interval (Wilson 1927). Every seed of one
(game, algorithm) pair trains in one compiled program.

    python baselines/hasac_matrix.py [--seeds 16] [--updates 300] [--alpha 0.05] [--actor-lr 3e-3]
        [--games climbing,penalty_k100,anticoordination]
        [--results baselines/results/hasac_matrix.json]  (per-seed outcomes, JSON)

`--actor-lr` takes several values (each a separate pair of programs per game).
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import marljax
from marljax.agents.base import Observation
from marljax.agents.sac import SACConfig, SACHParams, make_sac
from marljax.envs.matrix.matrix_game import MatrixGame
from marljax.shell.result_files import wilson_interval, write_results
from marljax.training import TrainConfig, broadcast_hparams, make_train, sweep

GAMES = {"climbing": 11.0, "penalty_k100": 10.0, "anticoordination": 1.0}  # -> optimal payoff
#: A common-payoff 2x2 game paid 1 when the two actions differ: from a start where both agents
#: lean to the same action, each one's best response to the other's current policy is to switch,
#: so simultaneous large steps switch both (and miscoordinate again) where sequential steps let
#: the second agent answer the first one's new policy.
ANTICOORDINATION = np.array([[0.0, 1.0], [1.0, 0.0]], np.float32)
AGENT = dict(
    hidden_sizes=(32,),
    batch_size=64,
    buffer_size=2000,
    warmup_steps=128,
    n_step=1,
    value_norm=False,
    critic_loss="mse",
)
HPARAMS = SACHParams(actor_lr=3e-3, critic_lr=3e-3, init_alpha=0.05)
NUM_ENVS, ROLLOUT = 8, 2


def run(
    game: str, sequential: bool, seeds: int, updates: int, hparams: SACHParams
) -> tuple[list[float], list[tuple]]:
    """Train `seeds` runs; return each seed's greedy joint action and its (common) payoff."""
    if game == "anticoordination":
        env = MatrixGame(np.stack([ANTICOORDINATION] * 2), name=game)
        params = env.default_params()
    else:
        env, params = marljax.make(f"matrix/{game}-v0")
    cfg = SACConfig(sequential=sequential, **AGENT)
    agent = make_sac(cfg, env, params)
    train = TrainConfig(NUM_ENVS, ROLLOUT, NUM_ENVS * ROLLOUT * updates)
    trainer = make_train(train, env, agent, params)
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    states, _ = sweep(trainer, keys, broadcast_hparams(hparams, 1))
    env_state, ts = env.reset(jax.random.PRNGKey(0), params)
    observation = Observation(ts.obs, ts.action_mask, ts.global_state, jnp.array(True))
    observation = jax.tree.map(lambda x: x[None], observation)  # one env
    greedy = jax.jit(
        lambda st: agent.act(st, (), observation, jax.random.PRNGKey(0), hparams, greedy=True)[0]
    )
    joints, payoffs = [], []
    for s in range(seeds):
        st = jax.tree.map(lambda x, s=s: x[0, s], states.agent_state)
        joint = greedy(st)[0]  # the policies' modes
        _, nts = env.step(jax.random.PRNGKey(1), env_state, jnp.asarray(joint), params)
        value = float(nts.reward.mean())
        joints.append(tuple(int(a) for a in joint))
        payoffs.append(value)
    return payoffs, joints


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=16, help="seeds per (game, algorithm)")
    parser.add_argument("--updates", type=int, default=300, help="updates per run")
    parser.add_argument(
        "--alpha", type=float, default=float(HPARAMS.init_alpha), help="fixed temperature"
    )
    parser.add_argument("--actor-lr", type=float, nargs="+", default=[float(HPARAMS.actor_lr)])
    parser.add_argument(
        "--games",
        default="climbing,penalty_k100",
        help=f"comma-separated, from {', '.join(GAMES)}",
    )
    parser.add_argument("--results", help="write every seed's greedy joint action here (JSON)")
    args = parser.parse_args(argv)
    games = [g.strip() for g in args.games.split(",") if g.strip()]
    unknown = sorted(set(games) - set(GAMES))
    if unknown or not games:
        parser.error(f"--games: unknown {unknown}; choose from {', '.join(GAMES)}")
    steps = NUM_ENVS * ROLLOUT * args.updates
    print(
        f"{args.seeds} seeds, {steps} env steps per run, alpha {args.alpha}, actor lr "
        f"{args.actor_lr}, {jax.devices()[0].platform}"
    )
    print(f"{'game':14s} {'algo':6s} {'optimum':>8s} {'fraction':>9s}  95% Wilson CI    time")
    rows = []
    for actor_lr in args.actor_lr:
        hparams = HPARAMS.replace(init_alpha=args.alpha, actor_lr=actor_lr)
        for game in games:
            for sequential, name in ((True, "hasac"), (False, "masac")):
                t0 = time.perf_counter()
                payoffs, joints = run(game, sequential, args.seeds, args.updates, hparams)
                wins = [v >= GAMES[game] - 1e-6 for v in payoffs]
                lo, hi = wilson_interval(sum(wins), args.seeds)
                elapsed = time.perf_counter() - t0
                print(
                    f"{game:14s} {name:6s} {sum(wins):>3d}/{args.seeds:<4d} "
                    f"{sum(wins) / args.seeds:9.2f}  [{lo:.2f}, {hi:.2f}]  {elapsed:5.0f}s   "
                    f"actor lr {actor_lr:g}, greedy joint actions: {joints}"
                )
                rows.append({"game": game, "algo": name, "alpha": args.alpha,
                             "actor_lr": actor_lr, "seconds_incl_compile": elapsed,
                             "per_seed": {"at_optimum": wins, "payoff": payoffs,
                                          "action_0": [j[0] for j in joints],
                                          "action_1": [j[1] for j in joints]}})  # fmt: skip
    if args.results:
        config = {"seeds": args.seeds, "updates": args.updates, "env_steps": steps,
                  "num_envs": NUM_ENVS, "rollout_len": ROLLOUT, "alpha": args.alpha,
                  "actor_lr": args.actor_lr, "critic_lr": float(HPARAMS.critic_lr),
                  "agent": {**AGENT, "parameter_mode": SACConfig().parameter_mode},
                  "games": games, "optimum": {g: GAMES[g] for g in games}}  # fmt: skip
        write_results(args.results, "baselines/hasac_matrix.py", config, rows)


if __name__ == "__main__":
    main()
