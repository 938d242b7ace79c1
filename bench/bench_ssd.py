"""Env steps per second of Cleanup and Harvest at 1, 64, 1024 and 4096 envs, beside JaxMARL's STORM.

marljax: `social/harvest-v0` and `social/cleanup-v0` (SSD maps, 5 agents, 15 x 15 x 7 views) and
their small variants (`*_small-v0`: 7 x 12 / 7 x 10 maps, 3 agents, 7 x 7 x 7 views), wrapped
as the training runner wraps them (`BatchedAutoReset(EpisodeStats(env))`: one reset branch per
batch, only when an episode ended), uniformly random actions, one jitted `lax.scan` over `T`
steps.
jaxmarl: `storm_2p` (JaxMARL 0.2.0's STORM gridworld "InTheGrid", 2 agents, 8 x 8 grid, 5 x 5
views; plain `storm` is pathologically slow on CPU, see shared KNOWN_ISSUES), `env.step` with
its built-in auto-reset, random actions, the same scan. JaxMARL 0.2.0 has no Cleanup or Harvest.

These are different games: the ratio compares throughput of a comparable workload (a
partially observed gridworld social dilemma with egocentric views), not the same computation.
Every step's outputs (observations, rewards, flags, and for marljax the global state, action
mask and episode statistics) are folded into a checksum so that no work can be dropped. One env
step = one joint step of one env.

    python bench/bench_ssd.py [--json PATH] [--quick] [--repeats N]
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from harness import Options, Result, SkipCase, case, main, requires, timed

import marljax
import marljax.envs.social.dilemma_grid  # noqa: F401  (registers the social/* grid ids)
from marljax.core.wrappers import BatchedAutoReset, EpisodeStats

NUM_ENVS = (1, 64, 1024, 4096)
MARLJAX_ENVS = (
    "social/harvest-v0",
    "social/cleanup-v0",
    "social/harvest_small-v0",
    "social/cleanup_small-v0",
)


def _sizes(opts: Options) -> tuple[int, ...]:
    return (1, 64) if opts.quick else NUM_ENVS


def _num_steps(num_envs: int, opts: Options) -> int:
    """Steps per timed call: about 0.1-1 s of work on a 2-core CPU."""
    if opts.quick:
        return 20
    return {1: 1000, 64: 200}.get(num_envs, 50)


def _task(num_envs: int) -> str:
    return f"grid social dilemma, random actions, E={num_envs}"


def _checksum(tree) -> jax.Array:
    return sum(jnp.sum(x.astype(jnp.float32)) for x in jax.tree.leaves(tree))


def _scan_rollout(step, sample_actions, num_steps: int):
    """`rollout(state, key) -> (state, checksum)` scanning `step(state, key, actions)`."""

    def rollout(state, key):
        def body(carry, key_t):
            state, total = carry
            key_act, key_env = jax.random.split(key_t)
            state, c = step(state, key_env, sample_actions(key_act))
            return (state, total + c), None

        (state, total), _ = jax.lax.scan(
            body, (state, jnp.float32(0)), jax.random.split(key, num_steps)
        )
        return state, total

    return rollout


# ----------------------------------------------------------------------------- marljax


def marljax_rollout(env_id: str, num_envs: int, num_steps: int):
    """`(init_state, rollout)` for a registered marljax env under the training wrappers."""
    env, params = marljax.make(env_id)
    wrapped = BatchedAutoReset(EpisodeStats(env))

    def step(state, key, actions):
        state, ts = wrapped.step(jax.random.split(key, num_envs), state, actions, params)
        return state, _checksum(ts)

    def sample_actions(key):
        return jax.random.randint(key, (num_envs, env.num_agents), 0, env.num_actions)

    reset = jax.jit(lambda k: wrapped.reset(jax.random.split(k, num_envs), params))
    state, _ = reset(jax.random.key(0))
    return state, _scan_rollout(step, sample_actions, num_steps)


def _marljax_case(env_id: str, label: str):
    @case(f"ssd/marljax_{label}")
    def run(opts: Options) -> list[Result]:
        results = []
        for E in _sizes(opts):
            T = _num_steps(E, opts)
            state, rollout = marljax_rollout(env_id, E, T)
            t = timed(
                rollout, state, jax.random.key(1), repeats=opts.repeats, first_call=opts.first_call
            )
            results.append(
                t.result(
                    _task(E),
                    f"marljax {label}",
                    E * T,
                    notes={"env": env_id, "num_envs": E, "num_steps": T},
                )
            )
        return results

    return run


for _env_id in MARLJAX_ENVS:
    _marljax_case(_env_id, _env_id.split("/")[1].removesuffix("-v0"))


# ----------------------------------------------------------------------------- jaxmarl


@case("ssd/jaxmarl_storm_2p")
def jaxmarl_storm(opts: Options) -> list[Result]:
    jaxmarl = requires("jaxmarl")
    try:
        env = jaxmarl.make("storm_2p")
    except Exception as e:  # noqa: BLE001  (report why instead of crashing the whole run)
        raise SkipCase(f"jaxmarl.make('storm_2p') failed: {e}") from e
    num_actions = env.num_actions
    results = []
    for E in _sizes(opts):
        T = _num_steps(E, opts)
        vstep = jax.vmap(env.step, in_axes=(0, 0, 0))

        def step(state, key, actions, E=E, vstep=vstep):
            obs, state, reward, done, info = vstep(jax.random.split(key, E), state, actions)
            return state, _checksum((obs, reward, done))

        def sample_actions(key, E=E):
            a = jax.random.randint(key, (2, E), 0, num_actions)
            return (a[0], a[1])

        _, state = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(0), E))
        rollout = _scan_rollout(step, sample_actions, T)
        t = timed(
            rollout, state, jax.random.key(1), repeats=opts.repeats, first_call=opts.first_call
        )
        results.append(
            t.result(
                _task(E), "jaxmarl", E * T, notes={"env": "storm_2p", "num_envs": E, "num_steps": T}
            )
        )
    return results


if __name__ == "__main__":
    main(
        [
            "ssd/jaxmarl_storm_2p",
            *(f"ssd/marljax_{i.split('/')[1].removesuffix('-v0')}" for i in MARLJAX_ENVS),
        ],
        description=__doc__.splitlines()[0],
        baseline="jaxmarl",
        repeats=3,
        first_call=False,
    )
