"""Testing utilities: the environment conformance kit `check_env` and a tiny toy environment.

Every environment's tests call::

    from marljax.testing import check_env

    env, params = marljax.make("family/name-v0")
    check_env(env, params)

`check_env` checks the environment contract (docs/envs.md) (pure `reset`/`step`, traced
params, agents as a leading axis, declared spaces, masks, determinism, episode ends) and raises an
`AssertionError` naming the environment and the property that failed.

`CountingEnv` is a deliberately small environment with hand-computable dynamics, used to test the
core (wrappers, registry, this kit) without depending on any env family. Importing this module
registers it as `"testing/counting-v0"`.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core import registry as _registry
from marljax.core import spaces
from marljax.core.types import (
    Array,
    Environment,
    EnvParams,
    PRNGKey,
    TimeStep,
    default_global_state,
)
from marljax.core.wrappers import AutoReset

__all__ = [
    "CountingEnv",
    "CountingParams",
    "CountingState",
    "check_env",
    "fast_compile_options",
    "fast_jit",
]


# --------------------------------------------------------------------------------------------
# The toy environment.
# --------------------------------------------------------------------------------------------


@struct.dataclass
class CountingParams(EnvParams):
    """Parameters of `CountingEnv` (a traced pytree).

    Attributes:
      max_steps: time limit; the episode is truncated after this many steps (unless it
        terminates on the same step).
      goal: the episode terminates when the step counter reaches `goal`.
    """

    max_steps: int = 8
    goal: int = 5


@struct.dataclass
class CountingState:
    """State of `CountingEnv`."""

    count: Array  # [] int32 steps taken in this episode
    last_action: Array  # [A] int32 each agent's previous action, -1 right after reset


class CountingEnv(Environment[CountingState, CountingParams]):
    """A toy environment whose every output can be computed by hand.

    - `A = num_agents` agents, each with `Discrete(3)` actions; action 2 is always masked for
      agent 0 (so masks are exercised), every action is legal for the others.
    - Observation of agent `i`: `[count, last_action_i]` as float32, where `count` is the number
      of steps taken in this episode and `last_action_i` is `-1` right after reset.
    - Reward of agent `i`: the value of its (clipped) action, `float(action_i)`.
    - Terminates when `count` reaches `params.goal`; truncates when `count` reaches
      `params.max_steps` without terminating.
    - Deterministic (the keys are unused); out-of-range actions are clipped into `0 .. 2`.

    Args:
      num_agents: the number of agents `A` (static).
    """

    num_actions: int = 3

    def __init__(self, num_agents: int = 2):
        if int(num_agents) < 1:
            raise ValueError(f"CountingEnv needs num_agents >= 1, got {num_agents}")
        self.num_agents = int(num_agents)

    def default_params(self) -> CountingParams:
        return CountingParams()

    def reset(self, key: PRNGKey, params: CountingParams) -> tuple[CountingState, TimeStep]:
        del key, params  # deterministic; every episode starts the same way
        state = CountingState(
            count=jnp.zeros((), jnp.int32),
            last_action=jnp.full((self.num_agents,), -1, jnp.int32),
        )
        reward = jnp.zeros((self.num_agents,), jnp.float32)
        return state, self._timestep(state, reward, jnp.array(False), jnp.array(False))

    def step(
        self, key: PRNGKey, state: CountingState, actions: Array, params: CountingParams
    ) -> tuple[CountingState, TimeStep]:
        del key
        actions = jnp.clip(jnp.asarray(actions).astype(jnp.int32), 0, self.num_actions - 1)
        count = state.count + 1
        terminated = count >= params.goal
        truncated = jnp.logical_and(count >= params.max_steps, jnp.logical_not(terminated))
        new_state = CountingState(count=count, last_action=actions)
        return new_state, self._timestep(
            new_state, actions.astype(jnp.float32), terminated, truncated
        )

    def _timestep(
        self, state: CountingState, reward: Array, terminated: Array, truncated: Array
    ) -> TimeStep:
        count = jnp.broadcast_to(state.count, (self.num_agents,))
        obs = jnp.stack([count, state.last_action], axis=-1).astype(jnp.float32)  # [A, 2]
        return TimeStep(
            obs=obs,
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            action_mask=self.action_mask(),
            global_state=default_global_state(obs),
            extras={},
        )

    def action_mask(self) -> Array:
        """`[A, 3]` bool: all actions legal except action 2 of agent 0."""
        return jnp.ones((self.num_agents, self.num_actions), bool).at[0, 2].set(False)

    def observation_space(self, params: CountingParams) -> spaces.Box:
        high = jnp.maximum(jnp.asarray(params.max_steps, jnp.float32), self.num_actions - 1)
        return spaces.Box(-1.0, high, (2,), jnp.float32)

    def action_space(self, params: CountingParams) -> spaces.Discrete:
        return spaces.Discrete(self.num_actions)


if "testing/counting-v0" not in _registry._REGISTRY:  # importable twice (e.g. reloads)
    _registry.register(
        "testing/counting-v0",
        CountingEnv,
        description="Toy env for tests: counts steps, reward = action, agent 0 may not play 2.",
    )


# --------------------------------------------------------------------------------------------
# The conformance kit.
# --------------------------------------------------------------------------------------------


def check_env(
    env: Environment,
    params: EnvParams,
    *,
    num_steps: int = 64,
    num_envs: int = 4,
    seed: int = 0,
) -> None:
    """Check that an environment meets the marljax environment contract (docs/envs.md).

    In order, it checks:

    1. Declarations: `num_agents >= 1`; `observation_space`, `action_space` and
       `global_state_space` return spaces; `agent_types` is `[A]` integers.
    2. Signatures (with `jax.eval_shape`, after `reset` and after `step`): `obs` is
       `[A, *observation_space(params).shape]` with its dtype; `reward` is `[A]` floating;
       `terminated` and `truncated` are `[]` bool; `action_mask` is
       `[A, spaces.num_actions(action_space)]` bool; `global_state` has the shape and dtype of
       `global_state_space(params)`; `step` returns a state and a timestep with the same
       structure, shapes and dtypes (extras included) as `reset`.
    3. Trace once: jitted `reset` and `step` trace once across calls with new keys and states
       returned by both `reset` and `step` (a retrace is a recompile in every user's loop; a
       common cause is a state leaf whose dtype or weak type differs between `reset` and
       `step`). Checked abstractly: a retrace depends on shapes, dtypes and weak types only.
    4. Determinism: a freshly traced `reset`/`step` lowers to the same program as the first
       trace, or else gives bit-identical results for the same key (no Python/numpy randomness
       at trace time); two runs of the rollout below give the same bits.
    5. vmap over params: the rollout below is vmapped over keys *and* stacked copies of
       `params`; its reset timesteps and final states have the unbatched signatures with a
       leading axis, and an extra lane with lane 0's key and params equals lane 0.
    6. Rollout, vmapped over `num_envs` keys: `num_steps` steps of `AutoReset(env)` in one
       `lax.scan` inside one `jit`, with random legal actions (`action_space.sample(key, mask)`
       per agent). At reset the reward is zero and the episode is not over; every episode ends
       within `params.max_steps` steps, and an episode that is truncated without terminating
       lasted exactly `params.max_steps` steps (so after an end the next episode starts afresh);
       every observation lies in the observation space and every global state in its space;
       obs, rewards and global states are finite; every agent has at least one legal action at
       every step (discrete spaces); `extras["final_obs"]` holds the final observation at an
       episode end and equals `obs` elsewhere. If `params.max_steps > num_steps // 2`, the
       rollout is repeated with `max_steps = num_steps // 4` so that episode ends do happen.

    Behaviour of the core env after an episode ends (without `AutoReset`) is unspecified and not
    checked. The kit compiles one program, the rollout, with `fast_compile_options()` (it runs a
    few steps, so compile time is what counts), and otherwise only traces `reset` and `step`: a
    few seconds per env on a CPU.

    Args:
      env: the environment (possibly wrapped).
      params: its parameters; Python-scalar fields are converted to arrays.
      num_steps: rollout length `T`.
      num_envs: number of environments `E` vmapped over keys.
      seed: seed of every key used.

    Raises:
      AssertionError: naming the environment and the property that failed.
    """
    name = _env_name(env)
    key_sig, key_trace, key_roll = jax.random.split(jax.random.PRNGKey(seed), 3)

    with _phase(name, "declarations"):
        params = jax.tree.map(jnp.asarray, params)
        obs_space, act_space, gs_space = _check_declarations(name, env, params)
    with _phase(name, "signatures of reset/step"):
        sig = _check_signatures(name, env, params, key_sig, obs_space, act_space, gs_space)
    with _phase(name, "jit traces once"):
        first = _check_trace_once(name, env, params, key_trace, act_space)
    with _phase(name, "determinism of reset/step"):
        _check_retrace_determinism(name, env, act_space, first)

    max_steps = getattr(params, "max_steps", None)
    _require(
        max_steps is not None and np.ndim(max_steps) == 0,
        name,
        "params",
        "params must have a scalar `max_steps` field (subclass marljax.EnvParams)",
    )
    max_steps = int(max_steps)
    _require(max_steps >= 1, name, "params", f"params.max_steps must be >= 1, got {max_steps}")
    # One more lane than `num_envs`, with lane 0's key: the vmap-over-params check.
    keys = jax.random.split(key_roll, num_envs)
    keys = jnp.concatenate([keys, keys[:1]])
    stacked = jax.tree.map(lambda x: jnp.stack([x] * (num_envs + 1)), params)
    with _phase(name, "rollout (vmap over keys and params) compiles and runs"):
        rollout = _make_rollout(env, obs_space, act_space, gs_space, num_steps)
        out = _to_host(rollout(keys, stacked))
    out = _check_vmap_lanes(name, out, sig, num_envs)
    obs_shape = (num_envs, num_steps, *sig[1].obs.shape)
    _require(
        out.steps.timestep.obs.shape == obs_shape,
        name,
        "vmap over keys",
        f"the vmapped rollout's obs have shape {out.steps.timestep.obs.shape}, expected "
        f"[E, T, A, *obs_shape] = {list(obs_shape)}",
    )
    _check_rollout(name, out, max_steps, "rollout")
    with _phase(name, "determinism of rollout"):
        again = _to_host(rollout(keys, stacked))
    diff = _first_difference(out, jax.tree.map(lambda x: x[:num_envs], again))
    _require(
        diff is None,
        name,
        "determinism",
        f"two rollouts with the same key differ in {diff}; all randomness must come from the key",
    )
    if max_steps > num_steps // 2:
        short = max(1, num_steps // 4)
        # `x * 0 + short` keeps the dtype and weak type, so the rollout does not retrace.
        params_short = stacked.replace(max_steps=stacked.max_steps * 0 + short)
        with _phase(name, f"rollout with max_steps={short}"):
            out_short = _to_host(rollout(keys, params_short))
        out_short = jax.tree.map(lambda x: x[:num_envs], out_short)
        _check_rollout(name, out_short, short, f"rollout with max_steps={short}")


class _RolloutChecks(NamedTuple):
    """Per-timestep validity flags computed inside the rollout."""

    obs_in_space: Array  # [A] bool
    gs_in_space: Array  # [] bool
    obs_finite: Array  # [A] bool
    reward_finite: Array  # [A] bool
    gs_finite: Array  # [] bool
    has_legal: Array  # [A] bool, at least one legal action


class _RolloutStep(NamedTuple):
    actions: Array  # [A, *act_shape] the actions taken
    action_legal: Array  # [A] bool, allowed by the mask and inside the action space
    timestep: TimeStep  # the AutoReset timestep that followed
    checks: _RolloutChecks
    final_obs_in_space: Array  # [A] bool
    final_obs_finite: Array  # [A] bool


class _RolloutOut(NamedTuple):
    first: TimeStep  # the timestep after reset
    first_checks: _RolloutChecks
    steps: _RolloutStep  # leading axis [T]
    last_state: Any  # the env state after the last step


def _make_rollout(
    env: Environment,
    obs_space: spaces.Space,
    act_space: spaces.Space,
    gs_space: spaces.Space,
    num_steps: int,
):
    """`jit(vmap(rollout))(keys [E], params [E]) -> _RolloutOut`, leaves `[E, ...]` / `[E, T, ...]`."""
    wrapped = AutoReset(env)
    num_agents = env.num_agents

    def checks(ts: TimeStep) -> _RolloutChecks:
        return _RolloutChecks(
            obs_in_space=jax.vmap(obs_space.contains)(ts.obs),
            gs_in_space=gs_space.contains(ts.global_state),
            obs_finite=_finite(ts.obs.reshape(num_agents, -1), axis=-1),
            reward_finite=_finite(ts.reward, axis=None),
            gs_finite=jnp.all(_finite(ts.global_state, axis=None)),
            has_legal=jax.vmap(functools.partial(_has_legal, act_space))(ts.action_mask),
        )

    def rollout(key: PRNGKey, params: EnvParams) -> _RolloutOut:
        key_reset, key_steps = jax.random.split(key)
        state, ts0 = wrapped.reset(key_reset, params)

        def body(carry, keys_t):
            state, ts = carry
            key_step, keys_act = keys_t[0], keys_t[1:]
            actions = jax.vmap(act_space.sample)(keys_act, ts.action_mask)
            legal = jax.vmap(functools.partial(_action_legal, act_space))(ts.action_mask, actions)
            state, ts_next = wrapped.step(key_step, state, actions, params)
            final_obs = ts_next.extras["final_obs"]
            record = _RolloutStep(
                actions=actions,
                action_legal=legal,
                timestep=ts_next,
                checks=checks(ts_next),
                final_obs_in_space=jax.vmap(obs_space.contains)(final_obs),
                final_obs_finite=_finite(final_obs.reshape(num_agents, -1), axis=-1),
            )
            return (state, ts_next), record

        # All keys at once: one split here is cheaper to compile than one per step.
        step_keys = jax.random.split(key_steps, (num_steps, 1 + num_agents))
        (last_state, _), steps = jax.lax.scan(body, (state, ts0), step_keys)
        return _RolloutOut(ts0, checks(ts0), steps, last_state)

    return _jit(jax.vmap(rollout))


def _check_rollout(name: str, out: _RolloutOut, max_steps: int, what: str) -> None:
    """Host-side checks of a rollout's output (numpy arrays, leading axes `[E]` / `[E, T]`)."""
    first, steps = out.first, out.steps
    ts = steps.timestep

    # Reset.
    reward0 = np.asarray(first.reward)
    bad = np.argwhere(np.any(reward0 != 0, axis=-1))
    _require(
        bad.size == 0,
        name,
        "reset",
        f"reset must return zero rewards, got {reward0[bad[0][0]].tolist() if bad.size else None}",
    )
    _require(
        not np.any(first.terminated) and not np.any(first.truncated),
        name,
        "reset",
        "the timestep returned by reset has terminated or truncated set",
    )

    # Episode ends (before validity: a missed end shows up as odd observations).
    terminated = np.asarray(ts.terminated)
    done = np.logical_or(terminated, np.asarray(ts.truncated))  # [E, T]
    num_envs, num_steps = done.shape
    for e in range(num_envs):
        length = 0
        for t in range(num_steps):
            length += 1
            _require(
                length <= max_steps,
                name,
                "episode ends",
                f"an episode ran {length} steps without terminated/truncated but "
                f"params.max_steps = {max_steps} ({what}, env {e}, step {t + 1})",
            )
            if done[e, t]:
                _require(
                    terminated[e, t] or length == max_steps,
                    name,
                    "episode ends",
                    f"an episode was truncated after {length} steps but params.max_steps = "
                    f"{max_steps} (truncation means the time limit; {what}, env {e}, step {t + 1}"
                    "; a short episode after an earlier end means reset did not restart it)",
                )
                length = 0

    # Validity of every timestep: the reset one (as a step axis of length 1), then the steps.
    with_time = functools.partial(jax.tree.map, lambda x: np.asarray(x)[:, None])
    for flags, tss, label in (
        (with_time(out.first_checks), with_time(first), lambda t: "after reset"),
        (steps.checks, ts, lambda t: f"after step {t + 1} of the {what}"),
    ):
        for field, prop, msg, value in (
            (
                "obs_in_space",
                "observation space",
                "obs of agent {a} is outside observation_space",
                "obs",
            ),
            ("obs_finite", "finite values", "obs of agent {a} has NaN or inf", "obs"),
            ("reward_finite", "finite values", "reward of agent {a} is NaN or inf", "reward"),
            (
                "gs_in_space",
                "global state space",
                "global_state is outside global_state_space",
                "global_state",
            ),
            ("gs_finite", "finite values", "global_state has NaN or inf", "global_state"),
            ("has_legal", "masks", "agent {a} has no legal action in action_mask", "action_mask"),
        ):
            bad = np.argwhere(~np.asarray(getattr(flags, field)))
            if bad.size:
                e, t, *agent = (int(i) for i in bad[0])
                x = np.asarray(getattr(tss, value))[(e, t, *agent)]
                _require(
                    False,
                    name,
                    prop,
                    f"{msg.format(a=agent[0] if agent else None)} ({label(t)}, env {e}): "
                    f"{x.tolist()}",
                )

    bad = np.argwhere(~np.asarray(steps.action_legal))
    _require(
        bad.size == 0,
        name,
        "masks",
        f"the action {_where(bad)} sampled with action_space.sample(key, mask) is masked or "
        "outside the action space; is action_mask aligned with the action space?",
    )

    # AutoReset's final observation.
    _require(
        "final_obs" in ts.extras,
        name,
        "auto-reset",
        "AutoReset(env) timesteps have no extras['final_obs']",
    )
    final_obs, obs = np.asarray(ts.extras["final_obs"]), np.asarray(ts.obs)
    not_done = ~done
    _require(
        np.array_equal(final_obs[not_done], obs[not_done]),
        name,
        "auto-reset",
        "extras['final_obs'] differs from obs at a step that did not end the episode",
    )
    for field, prop in (
        ("final_obs_in_space", "observation space"),
        ("final_obs_finite", "finite values"),
    ):
        bad = np.argwhere(~np.asarray(getattr(steps, field)))
        _require(
            bad.size == 0,
            name,
            prop,
            f"extras['final_obs'] {_where(bad)} of the {what} is not a valid observation",
        )


def _where(bad: np.ndarray) -> str:
    """Location of the first `[env, step, agent]` index in `np.argwhere` output."""
    if not bad.size:
        return ""
    e, t, a = (int(i) for i in bad[0][:3])
    return f"of agent {a} at step {t + 1} in env {e}"


def _check_declarations(
    name: str, env: Environment, params: EnvParams
) -> tuple[spaces.Space, spaces.Space, spaces.Space]:
    num_agents = env.num_agents
    _require(
        isinstance(num_agents, (int, np.integer)) and num_agents >= 1,
        name,
        "declarations",
        f"num_agents must be a Python int >= 1 (static), got {num_agents!r}",
    )
    declared = {}
    for method in ("observation_space", "action_space", "global_state_space"):
        space = getattr(env, method)(params)
        _require(
            isinstance(space, spaces.Space),
            name,
            "declarations",
            f"{method}(params) must return a marljax.spaces.Space, got {type(space).__name__}",
        )
        declared[method] = space
    types = jnp.asarray(env.agent_types)
    _require(
        types.shape == (num_agents,) and jnp.issubdtype(types.dtype, jnp.integer),
        name,
        "declarations",
        f"agent_types must be [A] = [{num_agents}] integers, got {types.dtype}{list(types.shape)}",
    )
    return declared["observation_space"], declared["action_space"], declared["global_state_space"]


def _check_signatures(
    name: str,
    env: Environment,
    params: EnvParams,
    key: PRNGKey,
    obs_space: spaces.Space,
    act_space: spaces.Space,
    gs_space: spaces.Space,
) -> tuple[Any, TimeStep]:
    """Shapes and dtypes of `reset` and `step`, without running them. Returns reset's."""
    num_agents = env.num_agents
    num_actions = spaces.num_actions(act_space)
    state_sig, ts_sig = jax.eval_shape(env.reset, key, params)
    actions_sig = jax.ShapeDtypeStruct((num_agents, *act_space.shape), act_space.dtype)
    state2_sig, ts2_sig = jax.eval_shape(env.step, key, state_sig, actions_sig, params)

    for when, ts in (("reset", ts_sig), ("step", ts2_sig)):
        _require(
            isinstance(ts, TimeStep),
            name,
            "signatures",
            f"{when} must return (state, TimeStep), got a {type(ts).__name__} timestep",
        )
        expected = {
            "obs": (
                (num_agents, *obs_space.shape),
                jnp.dtype(obs_space.dtype),
                "[A, *observation_space(params).shape]",
            ),
            "terminated": ((), jnp.dtype(bool), "[] bool"),
            "truncated": ((), jnp.dtype(bool), "[] bool"),
            "action_mask": (
                (num_agents, num_actions),
                jnp.dtype(bool),
                "[A, num_actions(action_space)] bool",
            ),
            "global_state": (
                tuple(gs_space.shape),
                jnp.dtype(gs_space.dtype),
                "global_state_space(params)",
            ),
        }
        for field, (shape, dtype, doc) in expected.items():
            leaf = getattr(ts, field)
            _require(
                tuple(leaf.shape) == shape and leaf.dtype == dtype,
                name,
                f"{field} shape/dtype",
                f"timestep.{field} after {when} is {leaf.dtype}{list(leaf.shape)}, expected "
                f"{dtype}{list(shape)} ({doc})",
            )
        _require(
            tuple(ts.reward.shape) == (num_agents,)
            and jnp.issubdtype(ts.reward.dtype, jnp.floating),
            name,
            "reward shape/dtype",
            f"timestep.reward after {when} is {ts.reward.dtype}{list(ts.reward.shape)}, expected "
            f"floating [{num_agents}] ([A])",
        )
        _require(
            isinstance(ts.extras, dict),
            name,
            "extras",
            f"timestep.extras after {when} must be a dict, got {type(ts.extras).__name__}",
        )

    _require(
        set(ts_sig.extras) == set(ts2_sig.extras),
        name,
        "extras",
        f"extras keys differ between reset {sorted(ts_sig.extras)} and step "
        f"{sorted(ts2_sig.extras)}",
    )
    diff = _signature_difference(ts_sig, ts2_sig, with_weak_type=False)
    _require(
        diff is None,
        name,
        "timestep constant over steps",
        f"reset and step timesteps differ: {diff}",
    )
    diff = _signature_difference(state_sig, state2_sig, with_weak_type=False)
    _require(
        diff is None,
        name,
        "state constant over steps",
        f"the state returned by step differs from the one returned by reset: {diff}",
    )
    return state_sig, ts_sig


def _check_trace_once(
    name: str, env: Environment, params: EnvParams, key: PRNGKey, act_space: spaces.Space
) -> dict[str, Any]:
    """Jitted reset/step trace once over new keys and states returned by both reset and step.

    A retrace depends only on the arguments' structure, shapes, dtypes and weak types, so the
    calls are abstract (`jax.eval_shape` through the jitted functions): this traces, and compiles
    nothing. Returns the jitted functions and their arguments for `_check_retrace_determinism`.
    """
    traces = {"reset": 0, "step": 0}

    def reset(key, params):
        traces["reset"] += 1
        return env.reset(key, params)

    def step(key, state, actions, params):
        traces["step"] += 1
        return env.step(key, state, actions, params)

    reset_j, step_j = _jit(reset), _jit(step)
    keys = jax.random.split(key, 4)
    actions = jax.ShapeDtypeStruct((env.num_agents, *act_space.shape), act_space.dtype)
    state0, _ = jax.eval_shape(reset_j, keys[0], params)
    state1, _ = jax.eval_shape(step_j, keys[1], state0, actions, params)
    state2, _ = jax.eval_shape(step_j, keys[2], state1, actions, params)
    jax.eval_shape(reset_j, keys[3], params)

    _require(
        traces["reset"] == 1,
        name,
        "jit traces once",
        f"jit(reset) traced {traces['reset']} times for calls with new keys (same shapes); "
        "shapes and Python control flow must not depend on params",
    )
    if traces["step"] != 1:
        diffs = [
            d
            for d in (
                _signature_difference(state0, state1, with_weak_type=True),
                _signature_difference(state1, state2, with_weak_type=True),
            )
            if d
        ]
        hint = (
            f"; the state's leaves change between calls: {diffs[0]} (e.g. create counters with "
            "jnp.int32(0), not 0, so reset and step return the same dtype and weak type)"
            if diffs
            else ""
        )
        _require(
            False,
            name,
            "jit traces once",
            f"jit(step) traced {traces['step']} times for calls with new keys and states from "
            f"reset and from step{hint}",
        )
    return {
        "reset": (reset_j, env.reset, (keys[0], params)),
        "step": (step_j, env.step, (keys[1], state0, actions, params)),
    }


def _check_retrace_determinism(
    name: str, env: Environment, act_space: spaces.Space, first: dict[str, Any]
) -> None:
    """A fresh trace of reset/step gives the same bits as the first (no trace-time randomness).

    Two traces that lower to the same program give the same bits, so the programs' text is
    compared first (tracing only); only if it differs are both compiled and run on the same
    inputs (a different text may still compute the same values).
    """
    for what in ("reset", "step"):
        traced, method, args = first[what]
        fresh = _jit(method)
        if _program_text(traced, args) == _program_text(fresh, args):
            continue
        inputs = _concrete_inputs(env, act_space, args) if what == "step" else args
        diff = _first_difference(_to_host(traced(*inputs)), _to_host(fresh(*inputs)))
        _require(
            diff is None,
            name,
            "determinism",
            f"{what} with the same key differs between two traces in {diff}; all randomness "
            "must come from the key (no numpy/Python RNG or mutable state on self)",
        )


def _program_text(jitted: Any, args: tuple) -> str:
    """The StableHLO text of `jitted` lowered for `args`, without the module's name."""
    return re.sub(r"module @[\w.-]+", "module", jitted.lower(*args).as_text(), count=1)


def _concrete_inputs(env: Environment, act_space: spaces.Space, args: tuple) -> tuple:
    """`step`'s arguments with values: the state and a legal action after `reset`."""
    key, _, _, params = args
    state, ts = _jit(env.reset)(key, params)
    return key, state, _legal_actions(act_space, ts.action_mask), params


def _require_batched(name: str, prop: str, when: str, out: Any, sig: Any, batch: int) -> None:
    expected = jax.tree.map(lambda s: jax.ShapeDtypeStruct((batch, *s.shape), s.dtype), sig)
    diff = _signature_difference(expected, out, with_weak_type=False)
    _require(
        diff is None,
        name,
        prop,
        f"vmapped {when} does not return the unbatched (state, timestep) with a leading axis of "
        f"{batch}: {diff}",
    )


def _check_vmap_lanes(
    name: str, out: _RolloutOut, sig: tuple[Any, TimeStep], num_envs: int
) -> _RolloutOut:
    """The rollout's `num_envs + 1` lanes: batched reset timesteps and states have the unbatched
    signatures with a leading axis, and the last lane (lane 0's key and params again) equals lane 0.
    Returns the first `num_envs` lanes."""
    batch = num_envs + 1
    first = out.first.replace(extras={k: out.first.extras[k] for k in sig[1].extras})
    _require_batched(name, "vmap over params", "reset", first, sig[1], batch)
    _require_batched(name, "vmap over params", "step", out.last_state, sig[0], batch)
    leaves, _ = jax.tree_util.tree_flatten_with_path(out)
    for path, leaf in leaves:
        a, b = np.asarray(leaf)[0], np.asarray(leaf)[-1]
        same = (
            np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)
            if np.issubdtype(a.dtype, np.inexact)
            else np.array_equal(a, b)
        )
        _require(
            same,
            name,
            "vmap over params",
            "the rollout vmapped over keys and params differs between two lanes with the same "
            f"key and params in {_path_str(path)}",
        )
    return jax.tree.map(lambda x: x[:num_envs], out)


# --------------------------------------------------------------------------------------------
# Helpers.
# --------------------------------------------------------------------------------------------


def _legal_actions(space: spaces.Space, mask: Array) -> np.ndarray:
    """`[A, *space.shape]` deterministic legal actions (first allowed value), built on the host.

    Used where any legal action will do; costs no compilation.
    """
    mask = np.asarray(mask, bool)
    num_agents = mask.shape[0]
    if isinstance(space, spaces.Discrete):
        return np.argmax(mask, axis=-1).astype(space.dtype)
    if isinstance(space, spaces.MultiDiscrete):
        parts = [np.argmax(mask[:, lo:hi], axis=-1) for lo, hi in _segments(space)]
        return np.stack(parts, axis=-1).astype(space.dtype)
    if isinstance(space, spaces.Box):
        zero = np.zeros((num_agents, *space.shape), np.float32)
        low = np.broadcast_to(np.asarray(space.low, np.float32), space.shape)
        high = np.broadcast_to(np.asarray(space.high, np.float32), space.shape)
        return np.clip(zero, low, high).astype(space.dtype)
    raise TypeError(f"check_env does not know how to pick an action in {space!r}")


def _segments(space: spaces.MultiDiscrete) -> list[tuple[int, int]]:
    bounds = np.concatenate([[0], np.cumsum(space.nvec)]).tolist()
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def _host_has_legal(space: spaces.Space, mask: np.ndarray) -> bool:
    """Host version of `_has_legal` for one agent's `[N]` mask."""
    if isinstance(space, spaces.MultiDiscrete):
        return all(bool(np.any(mask[lo:hi])) for lo, hi in _segments(space))
    if isinstance(space, spaces.Discrete):
        return bool(np.any(mask))
    return True


def _has_legal(space: spaces.Space, mask: Array) -> Array:
    """`[]` bool: one agent's `[N]` mask leaves at least one legal choice (per sub-action)."""
    if isinstance(space, spaces.Discrete):
        return jnp.any(mask)
    if isinstance(space, spaces.MultiDiscrete):
        return jnp.all(jnp.stack([jnp.any(mask[lo:hi]) for lo, hi in _segments(space)]))
    return jnp.array(True)


def _action_legal(space: spaces.Space, mask: Array, action: Array) -> Array:
    """`[]` bool: one agent's action lies in the space and is allowed by its `[N]` mask."""
    inside = space.contains(action)
    if isinstance(space, spaces.Discrete):
        idx = jnp.clip(action.astype(jnp.int32), 0, space.n - 1)
        return inside & mask[idx]
    if isinstance(space, spaces.MultiDiscrete):
        lows = jnp.asarray([lo for lo, _ in _segments(space)])
        idx = lows + jnp.clip(action.astype(jnp.int32), 0, jnp.asarray(space.nvec) - 1)
        return inside & jnp.all(mask[idx])
    return inside


def _finite(x: Array, axis: int | None) -> Array:
    """Elementwise (or reduced over `axis`) `isfinite`; always true for integer and bool dtypes."""
    ok = jnp.isfinite(x) if jnp.issubdtype(x.dtype, jnp.inexact) else jnp.ones(x.shape, bool)
    return ok if axis is None else jnp.all(ok, axis=axis)


def _leaf_signature(x: Any, with_weak_type: bool) -> tuple:
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        x = jnp.asarray(x)
    sig = (tuple(x.shape), x.dtype)
    if with_weak_type:
        sig += (bool(getattr(x, "weak_type", False)),)
    return sig


def _fmt_signature(sig: tuple) -> str:
    text = f"{sig[1]}{list(sig[0])}"
    return text + (" (weak type)" if len(sig) > 2 and sig[2] else "")


def _signature_difference(a: Any, b: Any, *, with_weak_type: bool) -> str | None:
    """The first difference in structure, shape or dtype between two pytrees, or None."""
    leaves_a, tree_a = jax.tree_util.tree_flatten_with_path(a)
    leaves_b, tree_b = jax.tree_util.tree_flatten_with_path(b)
    if tree_a != tree_b:
        paths_a = {_path_str(p) for p, _ in leaves_a}
        paths_b = {_path_str(p) for p, _ in leaves_b}
        only_a, only_b = sorted(paths_a - paths_b), sorted(paths_b - paths_a)
        return (
            f"different structure (only in first: {only_a}, only in second: {only_b}; "
            f"{tree_a} vs {tree_b})"
        )
    for (path, x), (_, y) in zip(leaves_a, leaves_b, strict=True):
        sx, sy = _leaf_signature(x, with_weak_type), _leaf_signature(y, with_weak_type)
        if sx != sy:
            return f"{_path_str(path)}: {_fmt_signature(sx)} vs {_fmt_signature(sy)}"
    return None


def _first_difference(a: Any, b: Any) -> str | None:
    """The path of the first leaf that is not bit-identical between two pytrees, or None."""
    diff = _signature_difference(a, b, with_weak_type=False)
    if diff is not None:
        return diff
    leaves_a, _ = jax.tree_util.tree_flatten_with_path(a)
    for (path, x), y in zip(leaves_a, jax.tree.leaves(b), strict=True):
        if np.asarray(x).tobytes() != np.asarray(y).tobytes():
            return _path_str(path)
    return None


@functools.cache
def fast_compile_options() -> dict[str, Any]:
    """XLA compiler options that shorten compiling at the cost of run speed (see `fast_jit`).

    LLVM's optimisation level 0, and, where this XLA knows the option, XLA:CPU's loop emitters
    instead of its MLIR fusion emitters (on a 2-core CPU: `check_env` on Harvest 15.7 s -> 9.8 s,
    a QMIX training program 13.9 s -> 9.7 s to compile, with the same run time at test sizes).
    The option is tried once on a one-line program: XLA renames and retires its options.
    """
    options: dict[str, Any] = {"xla_backend_optimization_level": 0}
    emitters = {**options, "xla_cpu_use_fusion_emitters": False}
    try:
        jax.block_until_ready(jax.jit(lambda x: x + 1, compiler_options=emitters)(np.float32(0)))
    except Exception:  # noqa: BLE001  (an unknown option: keep the level alone)
        return options
    return emitters


def fast_jit(fun: Any, **kwargs: Any) -> Any:
    """`jax.jit` with `fast_compile_options()`, for programs that run a few steps (checks, tests).

    Where a program runs for a few steps, compile time is its cost. Keyword arguments go to
    `jax.jit`.
    """
    return jax.jit(fun, compiler_options=fast_compile_options(), **kwargs)


_jit = fast_jit


def _to_host(tree: Any) -> Any:
    """A pytree of numpy arrays (typed PRNG keys as their raw key data)."""

    def leaf(x):
        if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        return np.asarray(x)

    return jax.tree.map(leaf, tree)


def _path_str(path: tuple) -> str:
    return jax.tree_util.keystr(path) or "<root>"


def _env_name(env: Environment) -> str:
    try:
        return str(env.name)
    except Exception:  # a broken env should still get a readable report
        return type(env).__name__


def _require(cond: Any, name: str, prop: str, msg: str) -> None:
    if not bool(cond):
        raise AssertionError(f"check_env({name}) failed [{prop}]: {msg}")


@contextlib.contextmanager
def _phase(name: str, prop: str) -> Iterator[None]:
    """Turn any error raised while checking `prop` into an AssertionError naming env and prop."""
    try:
        yield
    except AssertionError:
        raise
    except Exception as e:  # noqa: BLE001  (we re-raise every error, with context)
        hint = ""
        if isinstance(e, jax.errors.JAXTypeError):
            hint = (
                " -- params and state are traced: shapes and Python control flow must not depend "
                "on their values (make shape-determining values static constructor arguments)"
            )
        raise AssertionError(
            f"check_env({name}) failed [{prop}]: {type(e).__name__}: {e}{hint}"
        ) from e
