"""Env steps per second of the Coin Game at 1, 64, 1024 and 4096 parallel envs, marljax vs JaxMARL.

marljax: `marljax.make("social/coin_game-v0")` (2 players, 3x3 torus, 50-step episodes) wrapped for
training (`EpisodeStats(AutoReset(env))`), uniformly random actions drawn inside the program, one
jitted `lax.scan` over `T` steps of the vmapped step.
jaxmarl: `jaxmarl.make("coin_game", num_inner_steps=50, num_outer_steps=1)` (JaxMARL 0.2.0,
2 players, 3x3 grid, 50-step episodes), its own `step` (which auto-resets), the same random
actions, the same scan and vmap.

Differences to keep in mind: JaxMARL's Coin Game keeps two coins (one per colour) on the grid and
flat int8 observations `[36]`; marljax's has one coin of a random owner (Lerer & Peysakhovich's
game), uint8 `[3, 3, 4]` observations, a float32 global state and episode statistics. In both, every
step's outputs (observations, rewards, done flags and, for marljax, the global state, action
masks, final observations and episode statistics) are folded into a checksum so that the compiler
cannot drop work. One env step = one joint step of one env. For each batch size the two frameworks
are measured one after the other (interleaved), so that load changes on a shared machine hit both.

    python bench/bench_social.py [--json PATH] [--quick] [--repeats N] [--no-first-call]
"""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
from harness import Options, Result, SkipCase, case, env_sizes, env_steps, main, requires, timed

import marljax
import marljax.envs.social  # noqa: F401  (registers social/*)
from marljax.core.wrappers import wrap_for_training

NUM_ENVS = (1, 64, 1024, 4096)
NUM_STEPS = 1000
EPISODE = 50


def _sizes(opts: Options) -> tuple[tuple[int, ...], int]:
    return env_sizes(opts, NUM_ENVS), env_steps(opts, NUM_STEPS)


def _task(num_envs: int) -> str:
    return f"coin_game 2p 3x3 random actions, E={num_envs}"


def _checksum(tree) -> jax.Array:
    return sum(jnp.sum(x.astype(jnp.float32)) for x in jax.tree.leaves(tree))


def _scan_rollout(step, num_envs: int, num_steps: int):
    """`rollout(env_state, key) -> (env_state, checksum)`: `num_steps` random joint actions."""

    def rollout(env_state, key):
        def body(carry, key_t):
            env_state, total = carry
            key_act, key_env = jax.random.split(key_t)
            actions = jax.random.randint(key_act, (num_envs, 2), 0, 5)
            env_state, c = step(env_state, jax.random.split(key_env, num_envs), actions)
            return (env_state, total + c), None

        (env_state, total), _ = jax.lax.scan(
            body, (env_state, jnp.float32(0)), jax.random.split(key, num_steps)
        )
        return env_state, total

    return rollout


def _measure(framework: str, reset, step, num_envs: int, num_steps: int, opts: Options) -> Result:
    env_state = jax.jit(jax.vmap(reset))(jax.random.split(jax.random.key(0), num_envs))
    rollout = _scan_rollout(step, num_envs, num_steps)
    t = timed(
        rollout, env_state, jax.random.key(1), repeats=opts.repeats, first_call=opts.first_call
    )
    notes = {"num_envs": num_envs, "num_steps": num_steps}
    return t.result(_task(num_envs), framework, num_envs * num_steps, notes=notes)


def marljax_fns():
    """`(reset(key), step(env_state [E], keys [E], actions [E, 2]))` of the training stack."""
    env, params = marljax.make("social/coin_game-v0", max_steps=EPISODE)
    wrapped = wrap_for_training(env)

    def reset(key):
        return wrapped.reset(key, params)[0]

    def step(env_state, keys, actions):
        env_state, ts = jax.vmap(wrapped.step, in_axes=(0, 0, 0, None))(
            keys, env_state, actions, params
        )
        return env_state, _checksum(ts)

    return reset, step


def jaxmarl_fns(jaxmarl):
    """The same two functions for JaxMARL's `coin_game` (its `step` auto-resets)."""
    env = jaxmarl.make("coin_game", num_inner_steps=EPISODE, num_outer_steps=1)
    agents = env.agents

    def reset(key):
        return env.reset(key)[1]

    def one(key, state, a):
        obs, state, rew, dones, _ = env.step(key, state, {agents[0]: a[0], agents[1]: a[1]})
        return state, (obs, rew, dones)

    def step(env_state, keys, actions):
        env_state, out = jax.vmap(one)(keys, env_state, actions)
        return env_state, _checksum(out)

    return reset, step


@case("social_coin_game/marljax_vs_jaxmarl")
def coin_game_side_by_side(opts: Options) -> list[Result]:
    """Both frameworks at each batch size in turn (interleaved, so that a change in the load of
    a shared machine hits both alike); JaxMARL rows are left out if it is not installed."""
    try:
        jaxmarl = requires("jaxmarl")
    except SkipCase as e:
        print(f"# {e}: measuring marljax only", file=sys.stderr)
        jaxmarl = None
    frameworks = [("marljax", marljax_fns())]
    if jaxmarl is not None:
        frameworks.append(("jaxmarl", jaxmarl_fns(jaxmarl)))
    sizes, T = _sizes(opts)
    results = []
    for E in sizes:
        for name, (reset, step) in frameworks:
            results.append(_measure(name, reset, step, E, T, opts))
    return results


if __name__ == "__main__":
    main(["social_coin_game/marljax_vs_jaxmarl"], __doc__.splitlines()[0], baseline="jaxmarl")
