"""Env steps per second of Cleanup and Harvest at 1, 64, 1024 and 4096 envs, beside JaxMARL's STORM.

JaxMARL 0.2.0 has no Cleanup or Harvest, so the reference is its STORM gridworld `storm_2p`
("InTheGrid": 2 agents on an 8 x 8 grid, 5 x 5 egocentric views, 152-step episodes; plain `storm`
runs at about 16 env steps/s on a 2-core CPU whatever the batch size). These are different games: the ratios
compare the throughput of comparable workloads (partially observed gridworld social dilemmas
with egocentric, rotated views), not the same computation. Three sizes of marljax's games are
measured beside it:

- full: `social/harvest-v0` and `social/cleanup-v0` (the SSD maps, 16 x 38 and 25 x 18, 5 agents,
  15 x 15 x 7 views, 1000-step episodes), a much larger workload than `storm_2p`;
- small: `social/harvest_small-v0` and `social/cleanup_small-v0` (7 x 12 / 7 x 10 maps, 3 agents,
  7 x 7 x 7 views, 200-step episodes);
- matched: the `"tiny"` layouts (10 x 10 maps, 8 x 8 inside the walls like `storm_2p`'s grid),
  2 agents, 5 x 5 x 7 views (`view_radius=2`), 152-step episodes: the same workload size as
  `storm_2p` (map cells, agents, view cells, episode length), still different rules.

marljax envs are wrapped as the training runner wraps them (`BatchedAutoReset(EpisodeStats(env))`:
one reset branch per batch, only when an episode ended); `storm_2p` runs its `env.step` with its
built-in auto-reset. Uniformly random actions, one jitted `lax.scan` over `T` steps of the vmapped
step. Every step's outputs (observations, rewards, flags, and for marljax the global state, action
mask and episode statistics) are folded into a checksum so that no work can be dropped. One env
step = one joint step of one env. For each batch size, JaxMARL and every marljax configuration
are measured one after the other (interleaved), so that load changes on a shared machine hit all
alike; the ratios are the headline, not the absolute rates.

    python bench/bench_ssd.py [--json PATH] [--quick] [--repeats N] [--configs full small matched]

`--configs` keeps only the marljax configurations of the sizes named (full, small, matched;
e.g. `--configs full` for the two SSD maps beside `storm_2p`), to save compiles at large sizes.
"""

from __future__ import annotations

import argparse
import sys

import jax
import jax.numpy as jnp
from harness import Options, Result, SkipCase, case, env_sizes, main, requires, timed

import marljax
import marljax.envs.social.dilemma_grid  # noqa: F401  (registers the social/* grid ids)
from marljax.core.wrappers import BatchedAutoReset, EpisodeStats

NUM_ENVS = (1, 64, 1024, 4096)
#: storm_2p's episode length (JaxMARL 0.2.0 `num_inner_steps`), used by the matched configs.
STORM_EPISODE = 152
_MATCHED = {"layout": "tiny", "num_agents": 2, "view_radius": 2, "max_steps": STORM_EPISODE}
#: (label, registered id, overrides) of every marljax configuration measured.
MARLJAX_CONFIGS = (
    ("harvest full", "social/harvest-v0", {}),
    ("cleanup full", "social/cleanup-v0", {}),
    ("harvest small", "social/harvest_small-v0", {}),
    ("cleanup small", "social/cleanup_small-v0", {}),
    ("harvest matched", "social/harvest_small-v0", _MATCHED),
    ("cleanup matched", "social/cleanup_small-v0", _MATCHED),
)


#: the label words `--configs` kept (None: all).
SELECTED: dict[str, tuple[str, ...] | None] = {"words": None}


def _configs() -> tuple:
    words = SELECTED["words"]
    if words is None:
        return MARLJAX_CONFIGS
    return tuple(c for c in MARLJAX_CONFIGS if c[0].split()[-1] in words)


def _sizes(opts: Options) -> tuple[int, ...]:
    return env_sizes(opts, NUM_ENVS)


def _num_steps(num_envs: int, opts: Options) -> int:
    """Steps per timed call: about 0.1-1 s of work on a 2-core CPU."""
    if opts.num_steps:
        return opts.num_steps
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


def marljax_rollout(env_id: str, num_envs: int, num_steps: int, **overrides):
    """`(init_state, rollout)` for a registered marljax env under the training wrappers."""
    env, params = marljax.make(env_id, **overrides)
    wrapped = BatchedAutoReset(EpisodeStats(env))

    def step(state, key, actions):
        state, ts = wrapped.step(jax.random.split(key, num_envs), state, actions, params)
        return state, _checksum(ts)

    def sample_actions(key):
        return jax.random.randint(key, (num_envs, env.num_agents), 0, env.num_actions)

    reset = jax.jit(lambda k: wrapped.reset(jax.random.split(k, num_envs), params))
    state, _ = reset(jax.random.key(0))
    return state, _scan_rollout(step, sample_actions, num_steps)


def _measure_marljax(label: str, env_id: str, overrides: dict, E: int, opts: Options) -> Result:
    T = _num_steps(E, opts)
    state, rollout = marljax_rollout(env_id, E, T, **overrides)
    t = timed(rollout, state, jax.random.key(1), repeats=opts.repeats, first_call=opts.first_call)
    notes = {"env": env_id, "overrides": overrides, "num_envs": E, "num_steps": T}
    return t.result(_task(E), f"marljax {label}", E * T, notes=notes)


# ----------------------------------------------------------------------------- jaxmarl


def _measure_storm(env, E: int, opts: Options) -> Result:
    T = _num_steps(E, opts)
    num_actions = env.num_actions
    vstep = jax.vmap(env.step, in_axes=(0, 0, 0))

    def step(state, key, actions):
        obs, state, reward, done, info = vstep(jax.random.split(key, E), state, actions)
        return state, _checksum((obs, reward, done))

    def sample_actions(key):
        a = jax.random.randint(key, (2, E), 0, num_actions)
        return (a[0], a[1])

    _, state = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(0), E))
    rollout = _scan_rollout(step, sample_actions, T)
    t = timed(rollout, state, jax.random.key(1), repeats=opts.repeats, first_call=opts.first_call)
    return t.result(
        _task(E), "jaxmarl", E * T, notes={"env": "storm_2p", "num_envs": E, "num_steps": T}
    )


@case("ssd/side_by_side")
def side_by_side(opts: Options) -> list[Result]:
    """At each batch size: JaxMARL's `storm_2p`, then every marljax configuration (interleaved).

    JaxMARL rows are left out (with a note) if it is not installed or `storm_2p` fails to build.
    """
    storm = None
    try:
        jaxmarl = requires("jaxmarl")
        storm = jaxmarl.make("storm_2p")
    except SkipCase as e:
        print(f"# {e}: measuring marljax only", file=sys.stderr)
    except Exception as e:  # noqa: BLE001  (report why instead of crashing the whole run)
        print(f"# jaxmarl.make('storm_2p') failed ({e}): measuring marljax only", file=sys.stderr)
    results = []
    for E in _sizes(opts):
        if storm is not None:
            results.append(_measure_storm(storm, E, opts))
        for label, env_id, overrides in _configs():
            results.append(_measure_marljax(label, env_id, overrides, E, opts))
    return results


if __name__ == "__main__":
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--configs", nargs="+", choices=("full", "small", "matched"))
    known, rest = pre.parse_known_args(sys.argv[1:])
    SELECTED["words"] = tuple(known.configs) if known.configs else None
    sys.argv = [sys.argv[0], *rest]
    main(
        ["ssd/side_by_side"],
        description=__doc__.splitlines()[0],
        baseline="jaxmarl",
        repeats=3,
        first_call=False,
    )
