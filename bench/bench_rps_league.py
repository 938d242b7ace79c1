"""RoShamBo population env for training: learner steps per second, population env vs league.

The task is what a training rollout asks of the env: `T` throws of learners playing random moves
against the 43 competition bots, `43 * k` learner matches at a time. Two ways to serve it:

- `rps_env/population`: `matrix/rrps_population-v0` with `E = 43 * k` envs, each drawing one bot
  per episode. Under `vmap` the per-env bot index turns `lax.switch` into a select, so every env
  step runs all 43 bots' code (and carries all 43 bot states) to move ONE learner;
- `rps_env/league`: `matrix/rrps_league-v0` with `E = k` envs, each playing all 43 bots at once
  (slot `i` vs bot `i`): each bot's code runs once per step for 43 learners.

One "env step" in the table is one throw of one learner's match (a learner step), so the two
frameworks do the same work per row; the ratio is league / population.

    python bench/bench_rps_league.py                      # k = 1, 4; T = 200
    python bench/bench_rps_league.py --num-envs 1 --num-steps 1000
"""

from __future__ import annotations

import os
import sys

import jax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Options, Result, case, env_sizes, env_steps, main, timed  # noqa: E402

import marljax  # noqa: E402


def _sizes(opts: Options) -> tuple[tuple[int, ...], int]:
    return env_sizes(opts, (1, 4), (1,)), env_steps(opts, 200, 20)


def _rollout(env, params, num_envs: int, throws: int):
    """`key -> [] summed reward`: `throws` steps of `num_envs` envs with random learner moves."""
    reset = jax.vmap(env.reset, in_axes=(0, None))
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def run(key):
        state, _ = reset(jax.random.split(key, num_envs), params)

        def body(carry, k):
            state, total = carry
            k_act, k_env = jax.random.split(k)
            actions = jax.random.randint(k_act, (num_envs, env.num_agents), 0, 3)
            state, ts = step(jax.random.split(k_env, num_envs), state, actions, params)
            return (state, total + ts.reward.sum()), None

        (_, total), _ = jax.lax.scan(body, (state, 0.0), jax.random.split(key, throws))
        return total

    return run


def _case(opts: Options, env_id: str, framework: str) -> list[Result]:
    ks, throws = _sizes(opts)
    env, params = marljax.make(env_id, num_rounds=throws, num_throws=throws)
    bots = env.num_bots
    out = []
    for k in ks:
        num_envs = k if framework == "league" else bots * k
        fn = _rollout(env, params, num_envs, throws)
        t = timed(fn, jax.random.PRNGKey(0), repeats=opts.repeats, first_call=False)
        task = f"{bots} bots, {bots * k} learner matches, T={throws}"
        out.append(t.result(task, framework, bots * k * throws, notes={"num_envs": num_envs}))
    return out


@case("rps_env/population")
def population(opts: Options) -> list[Result]:
    return _case(opts, "matrix/rrps_population-v0", "population")


@case("rps_env/league")
def league(opts: Options) -> list[Result]:
    return _case(opts, "matrix/rrps_league-v0", "league")


if __name__ == "__main__":
    main(
        ["rps_env/population", "rps_env/league"],
        __doc__.split("\n\n")[0],
        baseline="population",
        repeats=2,
        first_call=False,
    )
