"""Level-Based Foraging: env steps per second, marljax vs Jumanji, side by side in one run.

Tasks (equal settings in both frameworks): LBF with full sight, `force_coop`, agent levels 1..2,
episodes of at most 50 steps, uniformly random actions (illegal ones included, which both treat
as no-ops), auto-reset at episode end; 2 agents and 2 food on 8x8, and 8 agents and 5 food on
15x15; `E` = 1, 64, 1024, 4096 parallel envs, `T` steps in one jitted `lax.scan`.

- marljax: `LevelBasedForaging` (vector observation) wrapped for training
  (`EpisodeStats(AutoReset(env))`), vmapped over envs. Every step's observations, rewards, flags,
  action mask, global state, final observation and episode statistics are folded into a checksum
  so that nothing is optimised away.
- Jumanji 1.1.2: `LevelBasedForaging` (vector observer) in `VmapWrapper(AutoResetWrapper(env))`,
  its documented batched training stack; its observations, action mask, rewards, discounts and
  step types are folded into the checksum. (marljax does a little more work per step: global
  state, final observation and episode statistics.)

The rules differ slightly (marljax follows lbforaging: swaps and moves into vacated cells are
allowed; Jumanji blocks moves into occupied cells; food spacing rules differ), see
`tests/test_lbf.py`. One env step = one joint step of one env (all its agents).

    python bench/bench_lbf.py [--quick] [--json PATH] [--repeats N] [--no-first-call]
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from harness import Options, Result, case, main, requires, timed

from marljax.core.wrappers import wrap_for_training
from marljax.envs.grid.lbf import LevelBasedForaging

#: agents -> (grid side, food).
SETTINGS = {2: (8, 2), 8: (15, 5)}
NUM_ENVS = (1, 64, 1024, 4096)
MAX_STEPS = 50


def _sizes(opts: Options) -> tuple[int, ...]:
    return (1, 64) if opts.quick else NUM_ENVS


def _steps(num_envs: int, quick: bool) -> int:
    if quick:
        return 16
    return max(32, min(500, 131072 // num_envs))


def _task(num_agents: int, num_envs: int) -> str:
    size, food = SETTINGS[num_agents]
    return f"LBF {size}x{size}-{num_agents}p-{food}f-coop random actions, E={num_envs}"


def _checksum(xs) -> jax.Array:
    return sum(jnp.sum(x.astype(jnp.float32)) for x in xs)


# ----------------------------------------------------------------------------- marljax


def marljax_rollout(num_agents: int, num_envs: int, num_steps: int):
    """`(init(key) -> env_state, run(env_state, key) -> (env_state, checksum))`."""
    size, food = SETTINGS[num_agents]
    env = LevelBasedForaging(size, num_agents, food)
    params = env.default_params().replace(force_coop=True, max_steps=MAX_STEPS)
    wrapped = wrap_for_training(env)
    vstep = jax.vmap(wrapped.step, in_axes=(0, 0, 0, None))

    def init(key):
        keys = jax.random.split(key, num_envs)
        return jax.vmap(wrapped.reset, in_axes=(0, None))(keys, params)[0]

    def run(env_state, key):
        def body(carry, key_t):
            env_state, total = carry
            key_act, key_env = jax.random.split(key_t)
            actions = jax.random.randint(key_act, (num_envs, num_agents), 0, 6)
            env_state, ts = vstep(jax.random.split(key_env, num_envs), env_state, actions, params)
            x = ts.extras
            c = _checksum(
                (
                    ts.obs,
                    ts.reward,
                    ts.terminated,
                    ts.truncated,
                    ts.action_mask,
                    ts.global_state,
                    x["final_obs"],
                    x["episode_return"],
                    x["episode_length"],
                )
            )
            return (env_state, total + c), None

        (env_state, total), _ = jax.lax.scan(
            body, (env_state, jnp.float32(0)), jax.random.split(key, num_steps)
        )
        return env_state, total

    return init, run


# ----------------------------------------------------------------------------- jumanji


def jumanji_rollout(num_agents: int, num_envs: int, num_steps: int):
    """The same with Jumanji's LBF in `VmapWrapper(AutoResetWrapper(env))`."""
    requires("jumanji")
    from jumanji.environments.routing.lbf import LevelBasedForaging as JumanjiLBF
    from jumanji.environments.routing.lbf.generator import RandomGenerator
    from jumanji.wrappers import AutoResetWrapper, VmapWrapper

    size, food = SETTINGS[num_agents]
    gen = RandomGenerator(size, num_agents, food, fov=size, max_agent_level=2, force_coop=True)
    env = VmapWrapper(AutoResetWrapper(JumanjiLBF(gen, time_limit=MAX_STEPS)))

    def init(key):
        return env.reset(jax.random.split(key, num_envs))[0]

    def run(env_state, key):
        def body(carry, key_t):
            env_state, total = carry
            actions = jax.random.randint(key_t, (num_envs, num_agents), 0, 6)
            env_state, ts = env.step(env_state, actions)
            obs = ts.observation
            c = _checksum((obs.agents_view, obs.action_mask, ts.reward, ts.discount, ts.step_type))
            return (env_state, total + c), None

        (env_state, total), _ = jax.lax.scan(
            body, (env_state, jnp.float32(0)), jax.random.split(key, num_steps)
        )
        return env_state, total

    return init, run


# ----------------------------------------------------------------------------- cases


def _measure(framework: str, make_rollout, opts: Options) -> list[Result]:
    results = []
    for num_agents in SETTINGS:
        for E in _sizes(opts):
            T = _steps(E, opts.quick)
            init, run = make_rollout(num_agents, E, T)
            env_state = jax.jit(init)(jax.random.PRNGKey(0))
            t = timed(
                run,
                env_state,
                jax.random.PRNGKey(1),
                repeats=opts.repeats,
                first_call=opts.first_call,
            )
            results.append(
                t.result(
                    _task(num_agents, E),
                    framework,
                    E * T,
                    notes={"num_envs": E, "num_steps": T, "num_agents": num_agents},
                )
            )
    return results


@case("lbf_env/marljax")
def marljax_lbf(opts: Options) -> list[Result]:
    return _measure("marljax", marljax_rollout, opts)


@case("lbf_env/jumanji")
def jumanji_lbf(opts: Options) -> list[Result]:
    return _measure("jumanji", jumanji_rollout, opts)


if __name__ == "__main__":
    main(
        ["lbf_env/marljax", "lbf_env/jumanji"],
        __doc__.splitlines()[0],
        baseline="jumanji",
        repeats=3,
    )
