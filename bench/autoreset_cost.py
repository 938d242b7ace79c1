"""What a per-env auto-reset costs under vmap, vs the runner's batch-level reset.

    python bench/autoreset_cost.py [--env grid/lmapf-v0] [--envs 64] [--steps 256]

`vmap(AutoReset(env))` turns the per-env `lax.cond` into a select, so the reset (here: generating
a new obstacle map and placing agents and goals) runs on every step. `BatchedAutoReset` (used by
`marljax.training.train.make_train`) branches once per batch on "did any episode end". Random actions;
every observation, global state, final observation and reward feeds a checksum so no work is
dropped. Compile time is reported apart from run time (median of 3).
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp

import marljax
from marljax.core.wrappers import AutoReset, BatchedAutoReset, EpisodeStats


def rollout_fn(env, params, kind: str, num_envs: int, num_steps: int):
    if kind == "vmap(AutoReset)":
        w = EpisodeStats(AutoReset(env))

        def reset(keys):
            return jax.vmap(w.reset, in_axes=(0, None))(keys, params)[0]

        def step(keys, s, a):
            return jax.vmap(w.step, in_axes=(0, 0, 0, None))(keys, s, a, params)
    else:
        w = BatchedAutoReset(EpisodeStats(env))

        def reset(keys):
            return w.reset(keys, params)[0]

        def step(keys, s, a):
            return w.step(keys, s, a, params)

    n = env.action_space(params).n

    @jax.jit
    def roll(key):
        def body(s, k):
            key_act, key_step = jax.random.split(k)
            a = jax.random.randint(key_act, (num_envs, env.num_agents), 0, n)
            s, ts = step(jax.random.split(key_step, num_envs), s, a)
            parts = (ts.reward, ts.obs, ts.global_state, ts.extras["final_obs"])
            return s, sum(jnp.sum(x.astype(jnp.float32)) for x in parts)

        s = reset(jax.random.split(key, num_envs))
        return jax.lax.scan(body, s, jax.random.split(key, num_steps))[1].sum()

    return roll


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="grid/lmapf-v0")
    p.add_argument("--envs", type=int, default=64)
    p.add_argument("--steps", type=int, default=256)
    args = p.parse_args()
    env, params = marljax.make(args.env)
    rates = {}
    for kind in ("vmap(AutoReset)", "BatchedAutoReset"):
        roll = rollout_fn(env, params, kind, args.envs, args.steps)
        t = time.perf_counter()
        jax.block_until_ready(roll(jax.random.PRNGKey(0)))
        first = time.perf_counter() - t
        runs = []
        for i in range(3):
            t = time.perf_counter()
            jax.block_until_ready(roll(jax.random.PRNGKey(i + 1)))
            runs.append(time.perf_counter() - t)
        run = sorted(runs)[1]
        rates[kind] = args.envs * args.steps / run
        print(
            f"{kind:18s} {args.env} E={args.envs} T={args.steps}: first call incl. compile "
            f"{first:.1f} s, run {run * 1e3:.1f} ms, {rates[kind]:,.0f} env steps/s"
        )
    ratio = rates["BatchedAutoReset"] / rates["vmap(AutoReset)"]
    print(f"BatchedAutoReset / vmap(AutoReset): {ratio:.1f}x")


if __name__ == "__main__":
    main()
