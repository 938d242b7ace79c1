"""Env steps per second of the Coin Game at 1, 64, 1024 and 4096 parallel envs, marljax vs JaxMARL.

Same rules on both sides (`tests/test_coin_game_parity.py` checks them step by step):
marljax: `marljax.make("social/coin_game_jaxmarl-v0")` (2 players, 3x3 torus, a coin per colour,
episodes of 10 inner episodes x 10 steps) in the runner's stack, `BatchedAutoReset(EpisodeStats(
env))` (a reset is paid only on steps where some episode ended), uniformly random actions drawn
inside the program, one jitted `lax.scan` over `T` steps of the batched step.
jaxmarl: `jaxmarl.make("coin_game")` (JaxMARL 0.2.0, defaults: 10 x 10 steps), its own `step`
(which auto-resets by computing a reset on every step and selecting it), `vmap`ped over the envs,
the same random actions, the same scan.

Both fold every step's outputs into a checksum so that the compiler cannot drop work a trainer
would use: marljax its whole timestep (uint8 `[2, 3, 3, 4]` observations, rewards, flags, action
mask, float32 global state, final observation and global state, episode statistics, the
cooperation labels), JaxMARL its observations (int8 `[36]` per agent), rewards and done flags
(marljax does more work). One env step = one joint step of one env. For each batch size the two
frameworks are measured one after the other (interleaved), so that load changes on a shared
machine hit both.

A second case times marljax's own Coin Game (`social/coin_game-v0`: one coin of a random owner,
never under an agent, 50-step episodes; Lerer & Peysakhovich 2017) in the same stack, alone: it
is a different game from JaxMARL's, so it gets no ratio.

    python bench/bench_social.py [--json PATH] [--quick] [--repeats N] [--no-first-call]
    python bench/bench_social.py --cases social_coin_game/marljax_vs_jaxmarl   # same rules only
"""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
from harness import Options, Result, SkipCase, case, env_sizes, env_steps, main, requires, timed

import marljax
import marljax.envs.social  # noqa: F401  (registers social/*)
from marljax.core.wrappers import BatchedAutoReset, EpisodeStats

NUM_ENVS = (1, 64, 1024, 4096)
NUM_STEPS = 1000


def _sizes(opts: Options) -> tuple[tuple[int, ...], int]:
    return env_sizes(opts, NUM_ENVS), env_steps(opts, NUM_STEPS)


def _task(game: str, num_envs: int) -> str:
    return f"coin_game {game} 2p 3x3 random actions, E={num_envs}"


def _checksum(tree) -> jax.Array:
    return sum(jnp.sum(x.astype(jnp.float32)) for x in jax.tree.leaves(tree))


def _scan_rollout(step, num_envs: int, num_steps: int):
    """`rollout(env_state, key) -> (env_state, checksum)`: `num_steps` random joint actions."""

    def rollout(env_state, key):
        def body(carry, key_t):
            env_state, total = carry
            key_act, key_env = jax.random.split(key_t)
            actions = jax.random.randint(key_act, (num_envs, 2), 0, 5)
            env_state, c = step(env_state, key_env, actions)
            return (env_state, total + c), None

        (env_state, total), _ = jax.lax.scan(
            body, (env_state, jnp.float32(0)), jax.random.split(key, num_steps)
        )
        return env_state, total

    return rollout


def marljax_fns(env_id: str, num_envs: int):
    """`(reset(key) -> env_state [E], step(env_state, key, actions [E, 2]))`, the runner's stack."""
    env, params = marljax.make(env_id)
    vec = BatchedAutoReset(EpisodeStats(env))

    def reset(key):
        return vec.reset(jax.random.split(key, num_envs), params)[0]

    def step(env_state, key, actions):
        env_state, ts = vec.step(jax.random.split(key, num_envs), env_state, actions, params)
        return env_state, _checksum(ts)

    return reset, step


def jaxmarl_fns(jaxmarl, num_envs: int):
    """The same two functions for JaxMARL's `coin_game` (its `step` auto-resets)."""
    env = jaxmarl.make("coin_game")
    agents = env.agents

    def one(key, state, a):
        obs, state, rew, dones, _ = env.step(key, state, {agents[0]: a[0], agents[1]: a[1]})
        return state, (obs, rew, dones)

    def reset(key):
        return jax.vmap(env.reset)(jax.random.split(key, num_envs))[1]

    def step(env_state, key, actions):
        env_state, out = jax.vmap(one)(jax.random.split(key, num_envs), env_state, actions)
        return env_state, _checksum(out)

    return reset, step


def _measure(framework: str, fns, game: str, num_envs: int, num_steps: int, opts) -> Result:
    reset, step = fns
    env_state = jax.jit(reset)(jax.random.key(0))
    rollout = _scan_rollout(step, num_envs, num_steps)
    t = timed(
        rollout, env_state, jax.random.key(1), repeats=opts.repeats, first_call=opts.first_call
    )
    notes = {"num_envs": num_envs, "num_steps": num_steps}
    return t.result(_task(game, num_envs), framework, num_envs * num_steps, notes=notes)


@case("social_coin_game/marljax_vs_jaxmarl")
def coin_game_side_by_side(opts: Options) -> list[Result]:
    """JaxMARL's Coin Game rules in both frameworks, at each batch size in turn (interleaved, so
    that a change in the load of a shared machine hits both alike); JaxMARL rows are left out if
    it is not installed."""
    try:
        jaxmarl = requires("jaxmarl")
    except SkipCase as e:
        print(f"# {e}: measuring marljax only", file=sys.stderr)
        jaxmarl = None
    sizes, T = _sizes(opts)
    game = "JaxMARL rules (2 coins, 10x10 steps)"
    results = []
    for E in sizes:
        fns = marljax_fns("social/coin_game_jaxmarl-v0", E)
        results.append(_measure("marljax", fns, game, E, T, opts))
        if jaxmarl is not None:
            results.append(_measure("jaxmarl", jaxmarl_fns(jaxmarl, E), game, E, T, opts))
    return results


@case("social_coin_game_one_coin/marljax")
def coin_game_one_coin(opts: Options) -> list[Result]:
    """marljax's one-coin Coin Game (Lerer & Peysakhovich's rules), alone: no reference runs it."""
    sizes, T = _sizes(opts)
    game = "one coin (50 steps)"
    return [
        _measure("marljax", marljax_fns("social/coin_game-v0", E), game, E, T, opts) for E in sizes
    ]


if __name__ == "__main__":
    main(
        ["social_coin_game/marljax_vs_jaxmarl", "social_coin_game_one_coin/marljax"],
        __doc__.splitlines()[0],
        baseline="jaxmarl",
    )
