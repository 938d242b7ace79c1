"""Level-Based Foraging: env steps per second, marljax vs Jumanji, side by side in one run.

Tasks (equal settings in both frameworks): LBF with full sight, `force_coop`, agent levels 1..2,
episodes of at most 50 steps, uniformly random actions (illegal ones included, which both treat
as no-ops), auto-reset at episode end; 8 agents and 5 food on 15x15, and 64 agents and 16 food on
32x32; `E` = 1, 64, 1024, 4096 parallel envs, `T` steps in one jitted `lax.scan`.

- marljax: `LevelBasedForaging` (vector observation) in the training runner's stack
  (`BatchedAutoReset(EpisodeStats(env))`, as `marljax.training.train.make_train` builds it: one `lax.cond`
  per step on "did any env end?", so resets are paid only on steps where an episode ended). Every
  step's observations, rewards, flags, action mask, global state, final observation and episode
  statistics are folded into a checksum so that nothing is optimised away.
- Jumanji 1.1.2: `LevelBasedForaging` (vector observer) in `VmapWrapper(AutoResetWrapper(env))`,
  its documented batched training stack (under `vmap` its per-env `lax.cond` computes a reset at
  every step); its observations, action mask, rewards, discounts and step types are folded into
  the checksum. (marljax does a little more work per step: global state, final observation and
  episode statistics.)

Both frameworks start every timed call from states whose step counters sit `T // 2` steps before
the time limit (when `T < 50`), so every call crosses exactly one episode boundary and pays for
one round of resets: a worst case for marljax's batched reset, whose natural rate is one reset per
50 steps. Where `T < 50`, the row `marljax (no reset in call)` times the same compiled program
started at step 0 (no episode ends inside the call); Jumanji's cost does not depend on it. The two frameworks run interleaved (marljax then Jumanji at each `E`), so slow drifts in
the load of a shared machine hit both alike; single numbers on a busy machine are still noisy.

The rules differ slightly (marljax follows lbforaging: swaps and moves into vacated cells are
allowed; Jumanji blocks moves into occupied cells; food spacing rules differ), see
`tests/test_lbf.py`. One env step = one joint step of one env (all its agents).

    python bench/bench_lbf.py [--quick] [--json PATH] [--repeats N] [--no-first-call]
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from bench_pathfinding import timed_starts  # compile once, time several start states
from harness import Options, Result, SkipCase, case, env_sizes, main, requires, timed

from marljax.core.wrappers import BatchedAutoReset, EpisodeStats
from marljax.envs.grid.lbf import LevelBasedForaging

#: agents -> (grid side, food).
SETTINGS = {8: (15, 5), 64: (32, 16)}
NUM_ENVS = (1, 64, 1024, 4096)
MAX_STEPS = 50


def _sizes(opts: Options) -> tuple[int, ...]:
    return env_sizes(opts, NUM_ENVS)


def _steps(num_agents: int, num_envs: int, opts: Options) -> int:
    if opts.num_steps:
        return opts.num_steps
    if opts.quick:
        return 16
    budget = 131072 if num_agents <= 8 else 8192  # env steps per call
    return max(8, min(200, budget // num_envs))


def _start_step(num_steps: int) -> int:
    """Step counter to start a timed call from: one episode boundary inside the call."""
    return max(0, MAX_STEPS - num_steps // 2) if num_steps < MAX_STEPS else 0


def _task(num_agents: int, num_envs: int) -> str:
    size, food = SETTINGS[num_agents]
    return f"LBF {size}x{size}-{num_agents}p-{food}f-coop random actions, E={num_envs}"


def _checksum(xs) -> jax.Array:
    return sum(jnp.sum(x.astype(jnp.float32)) for x in xs)


# ----------------------------------------------------------------------------- marljax


def marljax_rollout(num_agents: int, num_envs: int, num_steps: int):
    """`(init(key, t0) -> env_state, run(env_state, key) -> (env_state, checksum))`."""
    size, food = SETTINGS[num_agents]
    env = LevelBasedForaging(size, num_agents, food)
    params = env.default_params().replace(force_coop=True, max_steps=MAX_STEPS)
    vec_env = BatchedAutoReset(EpisodeStats(env))

    default_t0 = _start_step(num_steps)

    def init(key, t0=default_t0):
        state = vec_env.reset(jax.random.split(key, num_envs), params)[0]
        inner = state.inner.replace(t=jnp.full((num_envs,), t0, jnp.int32))
        return state.replace(inner=inner, episode_length=jnp.full((num_envs,), t0, jnp.int32))

    def run(env_state, key):
        def body(carry, key_t):
            env_state, total = carry
            key_act, key_env = jax.random.split(key_t)
            actions = jax.random.randint(key_act, (num_envs, num_agents), 0, 6)
            keys = jax.random.split(key_env, num_envs)
            env_state, ts = vec_env.step(keys, env_state, actions, params)
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

    t0 = _start_step(num_steps)

    def init(key):
        state = env.reset(jax.random.split(key, num_envs))[0]
        return state.replace(step_count=jnp.full((num_envs,), t0, jnp.int32))

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


def _measure_one(framework: str, make_rollout, num_agents: int, E: int, opts: Options) -> Result:
    T = _steps(num_agents, E, opts)
    init, run = make_rollout(num_agents, E, T)
    env_state = jax.jit(init)(jax.random.PRNGKey(0))
    t = timed(
        run, env_state, jax.random.PRNGKey(1), repeats=opts.repeats, first_call=opts.first_call
    )
    notes = {"num_envs": E, "num_steps": T, "num_agents": num_agents, "start_t": _start_step(T)}
    return t.result(_task(num_agents, E), framework, E * T, notes=notes)


def _measure_marljax(num_agents: int, E: int, opts: Options) -> list[Result]:
    """marljax from `T // 2` before the limit and, where `T < 50`, from step 0 (no reset)."""
    T = _steps(num_agents, E, opts)
    init, run = marljax_rollout(num_agents, E, T)
    init = jax.jit(init)
    key = jax.random.PRNGKey(0)
    starts = {"marljax": _start_step(T)}
    if T < MAX_STEPS:
        starts["marljax (no reset in call)"] = 0
    states = {name: init(key, t0) for name, t0 in starts.items()}
    timings = timed_starts(run, states, jax.random.PRNGKey(1), opts.repeats)
    return [
        t.result(
            _task(num_agents, E),
            name,
            E * T,
            notes={
                "num_envs": E,
                "num_steps": T,
                "num_agents": num_agents,
                "start_t": starts[name],
            },
        )
        for name, t in timings.items()
    ]


def _interleaved(num_agents: int, opts: Options) -> list[Result]:
    """marljax then Jumanji at each `E` (Jumanji skipped, not fatal, if it is missing)."""
    results = []
    for E in _sizes(opts):
        results.extend(_measure_marljax(num_agents, E, opts))
        try:
            results.append(_measure_one("jumanji", jumanji_rollout, num_agents, E, opts))
        except SkipCase as e:
            print(f"# jumanji skipped: {e}")
    return results


@case("lbf_env/A8")
def lbf_a8(opts: Options) -> list[Result]:
    return _interleaved(8, opts)


@case("lbf_env/A64")
def lbf_a64(opts: Options) -> list[Result]:
    return _interleaved(64, opts)


if __name__ == "__main__":
    main(
        ["lbf_env/A8", "lbf_env/A64"],
        __doc__.splitlines()[0],
        baseline="jumanji",
        repeats=3,
    )
