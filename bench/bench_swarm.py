"""Swarm scaling: agent-steps per second of the mean-field swarm envs from 100 to 100,000 agents.

marljax only (no reference framework has these tasks): `marljax.make("swarm/<task>-v0",
num_agents=A)` in the runner's stack, `BatchedAutoReset(EpisodeStats(env))`, uniformly random
discrete actions drawn inside the program, one jitted `lax.scan` over `T` steps of the batched
step; every step's whole timestep (observations, rewards, global state, extras) is folded into a
checksum so the compiler cannot drop work a trainer would use. Compile time is reported apart.

Rows:

- one env with `A = 100, 1,000, 10,000, 100,000` agents (the default torus grows with `A`, so the
  density is constant; `A <= 256` uses brute-force neighbours, larger `A` the spatial hash);
- brute-force neighbours forced at `A = 1,000` (`brute_force_threshold` raised), to show the
  `O(A^2)` cost the hash avoids;
- `E = 64` envs x `A = 100` agents (small swarms, batched).

The extra table after the main one gives the cost per agent-step (`run time / (E A T)`) per
row: roughly flat across `A` means no quadratic blow-up.

    python bench/bench_swarm.py [--json PATH] [--quick] [--repeats N] [--no-first-call]
    python bench/bench_swarm.py --cases swarm_scaling/vicsek      # one task
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from harness import Options, Result, case, main, timed

import marljax
import marljax.envs.swarm  # noqa: F401  (registers swarm/*)
from marljax.core.wrappers import BatchedAutoReset, EpisodeStats

TASKS = ("vicsek", "kuramoto", "aggregation")
#: (num_envs E, num_agents A, steps T, static overrides, label) of the full run.
ROWS = (
    (1, 100, 200, {}, ""),
    (1, 1_000, 200, {}, ""),
    (1, 1_000, 200, {"brute_force_threshold": 10**9}, "brute force"),
    (1, 10_000, 50, {}, ""),
    (1, 100_000, 10, {}, ""),
    (64, 100, 200, {}, ""),
)
QUICK_ROWS = (
    (1, 100, 10, {}, ""),
    (1, 1_000, 10, {}, ""),
    (4, 100, 10, {}, ""),
)


def _checksum(tree) -> jax.Array:
    return sum(jnp.sum(x.astype(jnp.float32)) for x in jax.tree.leaves(tree))


def _fns(task: str, num_envs: int, num_agents: int, overrides: dict):
    env, params = marljax.make(f"swarm/{task}-v0", num_agents=num_agents, **overrides)
    vec = BatchedAutoReset(EpisodeStats(env))
    n_actions = env.action_space(params).n

    def reset(key):
        return vec.reset(jax.random.split(key, num_envs), params)[0]

    def rollout(env_state, key, num_steps):
        def body(carry, key_t):
            env_state, total = carry
            key_act, key_env = jax.random.split(key_t)
            actions = jax.random.randint(key_act, (num_envs, num_agents), 0, n_actions)
            env_state, ts = vec.step(
                jax.random.split(key_env, num_envs), env_state, actions, params
            )
            return (env_state, total + _checksum(ts)), None

        (env_state, total), _ = jax.lax.scan(
            body, (env_state, jnp.float32(0)), jax.random.split(key, num_steps)
        )
        return env_state, total

    return env, reset, rollout


def _rows(opts: Options) -> tuple:
    """`--num-agents A1,A2,...`: one env of each size (`--num-steps`, default 10); else ROWS."""
    if opts.num_agents:
        return tuple((1, A, opts.num_steps or 10, {}, "") for A in opts.num_agents)
    return QUICK_ROWS if opts.quick else ROWS


def _scaling(task: str, opts: Options) -> list[Result]:
    results = []
    for E, A, T, overrides, label in _rows(opts):
        env, reset, rollout = _fns(task, E, A, overrides)
        env_state = jax.jit(reset)(jax.random.key(0))
        t = timed(
            lambda s, k, T=T, rollout=rollout: rollout(s, k, T),
            env_state,
            jax.random.key(1),
            repeats=opts.repeats,
            first_call=opts.first_call,
        )
        search = "hash" if env.unwrapped.neighbours.hashed else "brute force"
        variant = f"E={E} A={A:,}" + (f" ({label})" if label else f" ({search})")
        notes = {
            "num_envs": E,
            "num_agents": A,
            "num_steps": T,
            "agent_steps": E * A * T,
            "neighbour_search": repr(env.unwrapped.neighbours),
        }
        results.append(
            t.result(
                f"swarm/{task}-v0 random actions", "marljax", E * T, variant=variant, notes=notes
            )
        )
    return results


for _task in TASKS:
    case(f"swarm_scaling/{_task}")(lambda opts, _task=_task: _scaling(_task, opts))


def report(results: list[Result]) -> str:
    """Markdown table of agent-steps/s and ns per agent-step of the swarm rows (for run_all)."""
    rows = [r for r in results if "agent_steps" in r.notes]
    if not rows:
        return ""
    lines = [
        "Swarm scaling (cost per agent-step = run time / (envs x agents x steps); "
        "flat across agents = no quadratic blow-up):",
        "",
        "| task | variant | agent-steps / run | agent-steps/s | ns per agent-step |",
        "|---|---|---:|---:|---:|",
    ]
    for r in rows:
        n = r.notes["agent_steps"]
        lines.append(
            f"| {r.task} | {r.variant} | {n:,} | {n / r.run_s:,.0f} | {r.run_s / n * 1e9:,.1f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main(
        [f"swarm_scaling/{t}" for t in TASKS],
        __doc__.splitlines()[0],
        after=report,
        repeats=3,
        first_call=False,
    )
