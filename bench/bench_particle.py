"""Env steps per second of MPE simple spread and simple tag at 1 to 4096 parallel envs, vs JaxMARL.

marljax: `marljax.make("particle/simple_spread-v0")` (3 agents, 3 landmarks, discrete actions,
25-step episodes) and `particle/simple_tag-v0` (3 adversaries, 1 good agent, 2 obstacles) in the
runner's stack, `BatchedAutoReset(EpisodeStats(env))` (a reset is paid only on steps where some
episode ended), uniformly random actions drawn inside the program, one jitted `lax.scan` over `T`
steps of the batched step.
jaxmarl: `jaxmarl.make("MPE_simple_spread_v3")` / `"MPE_simple_tag_v3"` (JaxMARL 0.2.0, the same
tasks and physics; its episodes last 26 steps), its own `step` (which auto-resets by computing a
reset on every step and selecting it), `vmap`ped over the envs, the same random actions, the same
scan.

Both fold every step's outputs into a checksum so that the compiler cannot drop work a trainer
would use: marljax its whole timestep (observations, rewards, flags, action mask, global state,
final observation and global state, episode statistics), JaxMARL its observations, rewards and
done flags (marljax does slightly more work). One env step = one joint step of one env. For each
batch size the two frameworks are measured one after the other (interleaved), so that load changes
on a shared machine hit both.

    python bench/bench_particle.py [--json PATH] [--quick] [--repeats N] [--no-first-call]
    python bench/bench_particle.py --cases particle_spread/marljax_vs_jaxmarl   # spread only
"""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
from harness import Options, Result, SkipCase, case, env_sizes, env_steps, main, requires, timed

import marljax
import marljax.envs.particle  # noqa: F401  (registers particle/*)
from marljax.core.wrappers import BatchedAutoReset, EpisodeStats

#: task -> (marljax id, JaxMARL id, number of agents, row label).
TASKS = {
    "spread": (
        "particle/simple_spread-v0",
        "MPE_simple_spread_v3",
        3,
        "MPE simple spread 3 agents 3 landmarks",
    ),
    "tag": (
        "particle/simple_tag-v0",
        "MPE_simple_tag_v3",
        4,
        "MPE simple tag 3 adversaries 1 good 2 obstacles",
    ),
}
NUM_ENVS = (1, 64, 1024, 4096)
NUM_STEPS = 500


def _sizes(opts: Options) -> tuple[tuple[int, ...], int]:
    return env_sizes(opts, NUM_ENVS), env_steps(opts, NUM_STEPS)


def _task(task: str, num_envs: int) -> str:
    return f"{TASKS[task][3]} random actions, E={num_envs}"


def _checksum(tree) -> jax.Array:
    return sum(jnp.sum(x.astype(jnp.float32)) for x in jax.tree.leaves(tree))


def _scan_rollout(step, num_envs: int, num_agents: int, num_steps: int):
    """`rollout(env_state, key) -> (env_state, checksum)`: `num_steps` random joint actions."""

    def rollout(env_state, key):
        def body(carry, key_t):
            env_state, total = carry
            key_act, key_env = jax.random.split(key_t)
            actions = jax.random.randint(key_act, (num_envs, num_agents), 0, 5)
            env_state, c = step(env_state, key_env, actions)
            return (env_state, total + c), None

        (env_state, total), _ = jax.lax.scan(
            body, (env_state, jnp.float32(0)), jax.random.split(key, num_steps)
        )
        return env_state, total

    return rollout


def marljax_fns(task: str, num_envs: int):
    """`(reset(key) -> env_state [E], step(env_state, key, actions [E, A]))`, the runner's stack."""
    env, params = marljax.make(TASKS[task][0])
    vec = BatchedAutoReset(EpisodeStats(env))

    def reset(key):
        return vec.reset(jax.random.split(key, num_envs), params)[0]

    def step(env_state, key, actions):
        env_state, ts = vec.step(jax.random.split(key, num_envs), env_state, actions, params)
        return env_state, _checksum(ts)

    return reset, step


def jaxmarl_fns(jaxmarl, task: str, num_envs: int):
    """The same two functions for JaxMARL's MPE env (its `step` auto-resets)."""
    env = jaxmarl.make(TASKS[task][1])
    agents = env.agents

    def one(key, state, a):
        obs, state, rew, dones, _ = env.step(key, state, {n: a[i] for i, n in enumerate(agents)})
        return state, (obs, rew, dones)

    def reset(key):
        return jax.vmap(env.reset)(jax.random.split(key, num_envs))[1]

    def step(env_state, key, actions):
        env_state, out = jax.vmap(one)(jax.random.split(key, num_envs), env_state, actions)
        return env_state, _checksum(out)

    return reset, step


def _measure(
    framework: str, fns, task: str, num_envs: int, num_steps: int, opts: Options
) -> Result:
    reset, step = fns
    env_state = jax.jit(reset)(jax.random.key(0))
    rollout = _scan_rollout(step, num_envs, TASKS[task][2], num_steps)
    t = timed(
        rollout, env_state, jax.random.key(1), repeats=opts.repeats, first_call=opts.first_call
    )
    notes = {"num_envs": num_envs, "num_steps": num_steps}
    return t.result(_task(task, num_envs), framework, num_envs * num_steps, notes=notes)


def _side_by_side(task: str, opts: Options) -> list[Result]:
    """Both frameworks at each batch size in turn (interleaved, so that a change in the load of a
    shared machine hits both alike); JaxMARL rows are left out if it is not installed."""
    try:
        jaxmarl = requires("jaxmarl")
    except SkipCase as e:
        print(f"# {e}: measuring marljax only", file=sys.stderr)
        jaxmarl = None
    sizes, T = _sizes(opts)
    results = []
    for E in sizes:
        results.append(_measure("marljax", marljax_fns(task, E), task, E, T, opts))
        if jaxmarl is not None:
            results.append(_measure("jaxmarl", jaxmarl_fns(jaxmarl, task, E), task, E, T, opts))
    return results


@case("particle_spread/marljax_vs_jaxmarl")
def spread_side_by_side(opts: Options) -> list[Result]:
    """MPE simple spread (discrete actions), marljax vs JaxMARL."""
    return _side_by_side("spread", opts)


@case("particle_tag/marljax_vs_jaxmarl")
def tag_side_by_side(opts: Options) -> list[Result]:
    """MPE simple tag (discrete actions), marljax vs JaxMARL."""
    return _side_by_side("tag", opts)


if __name__ == "__main__":
    main(
        ["particle_spread/marljax_vs_jaxmarl", "particle_tag/marljax_vs_jaxmarl"],
        __doc__.splitlines()[0],
        baseline="jaxmarl",
    )
