"""Mechanism wrappers for social dilemmas: punishment, third-party punishment, partner selection,
reputation, and cooperation labels for matrix-style games.

Each wrapper is a pure `Environment` around a core env. Its traced constants (punishment cost and
fine, reputation decay, ...) are added as fields of a params class derived from the inner env's
params class, so `marljax.make(..., punish_fine=2.0)` and `vmap` over params work as for any env,
and the inner env's fields stay where they were.

Extended discrete actions are flat: an agent's action `a` in `Discrete(N * K)` is the pair
`(a // K, a % K)` = (inner action, mechanism choice), and the action mask is the outer product of
the inner mask and the mechanism's mask, so every agent in marljax (masked categorical policies)
can learn both at once. Wrapped observations are flattened, with the mechanism's information
appended.

Punishment timing. By default (`two_stage=False`) punishment is decided on the same step as the
inner action, from the previous step's observations (a one-step-delayed second stage). With
`two_stage=True` (`DirectPunishment`, `ThirdPartyPunishment`) every round is two env steps, as in
the experiments of Fehr & Gaechter (2000) and the seed paper: a *contribution step*, in which
only the inner action acts (the punishment part is masked to "nobody"), then a *punishment step*,
in which the observation shows this round's inner actions and only the punishment part acts
(the inner action is masked to 0 and ignored; the inner env does not step). The round's inner
payoff is paid on the contribution step, its punishment costs and fines on the punishment step;
the inner env's end of episode is reported on the punishment step that closes the round.

Reference for the mechanisms: "Investigating the Impact of Direct Punishment on the Emergence of
Cooperation in Multi-Agent Reinforcement Learning Systems" (seed paper of this family);
E. Fehr and S. Gaechter, "Cooperation and punishment in public goods experiments", AER 2000;
E. Fehr and U. Fischbacher, "Third-party punishment and social norms", Evol. Hum. Behav. 2004;
N. Anastassacos, S. Hailes and M. Musolesi, "Partner selection for the emergence of cooperation
in multi-agent systems using reinforcement learning", AAAI 2020; M. A. Nowak and K. Sigmund,
"Evolution of indirect reciprocity by image scoring", Nature 1998.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core import spaces
from marljax.core.types import Array, Environment, EnvParams, PRNGKey, TimeStep
from marljax.core.wrappers import Wrapper
from marljax.envs.social.coin_game import check_param

# ----------------------------------------------------------------------------- helpers

_DERIVED: dict[tuple[type, str], type] = {}


def extend_params(
    inner_cls: type,
    name: str,
    fields: dict[str, Any],
    check: Callable[[Any], None] | None = None,
) -> type:
    """A `flax.struct` params class deriving from `inner_cls` with extra traced fields.

    The inner env reads its own fields from an instance of the derived class unchanged. The
    class is created once per `(inner_cls, name)`, so jit caches keep hitting.

    Args:
      inner_cls: the inner env's params class.
      name: the wrapper's name (the class is named `<name><inner_cls.__name__>`).
      fields: new field name -> default value (must not exist in `inner_cls`).
      check: validation of the new fields' concrete values (kept as `cls._param_check`); the
        wrapper's `validate_params` runs the inner env's `validate_params`, then this.

    Returns:
      The derived params class.
    """
    key = (inner_cls, name)
    if key in _DERIVED:
        return _DERIVED[key]
    existing = {f.name for f in dataclasses.fields(inner_cls)}
    clash = sorted(existing & set(fields))
    if clash:
        raise ValueError(
            f"{name} cannot wrap an env whose params ({inner_cls.__name__}) already have the "
            f"field(s) {clash} (is the same mechanism applied twice?)"
        )
    namespace: dict[str, Any] = {"__annotations__": {k: type(v) for k, v in fields.items()}}
    namespace.update(fields)
    namespace["__doc__"] = f"{inner_cls.__name__} plus the traced fields of {name}: {list(fields)}."
    cls = struct.dataclass(type(f"{name}{inner_cls.__name__}", (inner_cls,), namespace))
    cls._param_check = check
    _DERIVED[key] = cls
    return cls


def validate_extended(inner: Environment, cls: type, params: EnvParams) -> None:
    """The inner env's `validate_params`, then the check of the fields `extend_params` added.

    Args:
      inner: the wrapped env (it reads its own fields of `params` unchanged).
      cls: the derived params class (from `extend_params`).
      params: concrete params of the wrapper.

    Raises:
      ValueError: naming the first field that holds an impossible value.
    """
    inner.validate_params(params)
    if cls._param_check is not None:
        cls._param_check(params)


def _derive(params: EnvParams, cls: type, values: dict[str, Any]) -> EnvParams:
    """An instance of the derived class `cls` holding `params`' fields and `values`."""
    inner = {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}
    return cls(**inner, **values)


def _discrete_n(env: Environment, wrapper: str) -> int:
    space = env.action_space(env.default_params())
    if not isinstance(space, spaces.Discrete):
        raise TypeError(
            f"{wrapper} needs an env with a Discrete action space, got {space!r} from {env.name}"
        )
    return space.n


def _flat(obs: Array, num_agents: int) -> Array:
    return obs.reshape(num_agents, -1).astype(jnp.float32)


def _bounds(space: spaces.Space, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """`[dim]` lower and upper bounds of a flattened Box (infinite for other spaces)."""
    if isinstance(space, spaces.Box):
        low = np.broadcast_to(np.asarray(space.low, np.float32), space.shape).reshape(-1)
        high = np.broadcast_to(np.asarray(space.high, np.float32), space.shape).reshape(-1)
        return low, high
    return np.full((dim,), -np.inf, np.float32), np.full((dim,), np.inf, np.float32)


def _box_plus(space: spaces.Space, extra: int, low: float = 0.0, high: float = 1.0) -> spaces.Box:
    """A flat Box: `space` flattened, then `extra` entries in `[low, high]`."""
    lo, hi = _bounds(space, space.flat_dim)
    lo = np.concatenate([lo, np.full((extra,), low, np.float32)])
    hi = np.concatenate([hi, np.full((extra,), high, np.float32)])
    return spaces.Box(lo, hi, (space.flat_dim + extra,), jnp.float32)


def _ego(num_agents: int) -> np.ndarray:
    """`[A, A]` int: row `i` lists agents `i, i+1, ..., i-1` (egocentric order)."""
    a = np.arange(num_agents)
    return (a[:, None] + a[None, :]) % num_agents


def _product_mask(inner_mask: Array, choice_mask: Array) -> Array:
    """`[A, N]` x `[A, K]` -> `[A, N * K]` bool, action `a = n * K + k`."""
    num_agents = inner_mask.shape[0]
    return (inner_mask[:, :, None] & choice_mask[:, None, :]).reshape(num_agents, -1)


def _nonneg(*names: str) -> Callable[[Any], None]:
    def check(params):
        for n in names:
            check_param(params, n, lambda v: v >= 0, "must be >= 0")

    return check


# ----------------------------------------------------------------------------- punishment


class _ParamsWrapper(Wrapper):
    """A wrapper whose params extend the inner env's (`self._params_cls`, see `extend_params`)."""

    _params_cls: type
    #: default values of the added fields that differ from the class's (a class attribute, so
    #: the wrapper's attribute lookup never reaches the inner env's)
    _defaults: Mapping[str, Any] = MappingProxyType({})

    def default_params(self):
        return _derive(self._env.default_params(), self._params_cls, dict(self._defaults))

    def validate_params(self, params) -> None:
        """Raise `ValueError` naming the field if `params` holds impossible values (host-side)."""
        validate_extended(self._env, self._params_cls, params)


@struct.dataclass
class PunishmentState:
    """State of `DirectPunishment` and `ThirdPartyPunishment` (one step per round)."""

    inner: Any  # the inner env's state
    punished: Array  # [A] float32 punishments each agent received on the last step
    punishing: Array  # [A] float32 punishments each agent gave on the last step


#: Kinds of step of a two-stage punishment round (`TwoStagePunishmentState.stage`).
CONTRIBUTION_STAGE, PUNISHMENT_STAGE = 0, 1


@struct.dataclass
class TwoStagePunishmentState:
    """State of `DirectPunishment` and `ThirdPartyPunishment` with `two_stage=True`."""

    inner: Any  # the inner env's state (punishment steps leave it unchanged)
    punished: Array  # [A] float32 punishments received in the last punishment step (0 after
    #   a contribution step)
    punishing: Array  # [A] float32 punishments given in the last punishment step
    stage: Array  # [] int32 kind of the NEXT step: 0 contribution, 1 punishment
    round_actions: Array  # [P] int32 inner actions of the last contribution step, -1 at reset
    round_ts: TimeStep  # the inner timestep of the last contribution step (of reset at first)
    t: Array  # [] int32 env steps taken (two per round)


def _unlabelled(extras: dict) -> dict:
    """Inner extras with the cooperation labels cleared (no inner choice on a punishment step)."""
    return {
        k: (jnp.zeros_like(v) if k in ("cooperated", "defected") else v) for k, v in extras.items()
    }


class _Punishment(_ParamsWrapper):
    """Shared machinery of the punishment wrappers: one-step and two-stage rounds.

    Subclasses set `num_players` (agents of the inner env), `num_choices` (`K`),
    `num_inner_actions` (`N`), `two_stage`, and implement `_pad` (`[P, ...]` -> `[A, ...]`).
    """

    num_players: int
    num_choices: int
    num_inner_actions: int
    two_stage: bool = False

    def _pad(self, x: Array) -> Array:
        return x

    def _clip(self, actions: Array) -> Array:
        return jnp.clip(
            jnp.asarray(actions).astype(jnp.int32).reshape(self.num_agents),
            0,
            self.num_inner_actions * self.num_choices - 1,
        )

    def _initial_state(self, inner: Any, ts: TimeStep):
        zeros = jnp.zeros((self.num_agents,), jnp.float32)
        if not self.two_stage:
            return PunishmentState(inner, zeros, zeros)
        return TwoStagePunishmentState(
            inner=inner,
            punished=zeros,
            punishing=zeros,
            stage=jnp.int32(CONTRIBUTION_STAGE),
            round_actions=jnp.full((self.num_players,), -1, jnp.int32),
            round_ts=ts,
            t=jnp.int32(0),
        )

    def _step_rounds(self, key, state, inner_actions, given, received, params, fines=None):
        """One env step: `(state, inner timestep to show, [A] reward)`.

        One-step rounds: the inner env steps and punishments apply at once. Two-stage rounds:
        a contribution step runs the inner env only (its reward is the inner reward, the episode
        never ends there); a punishment step leaves the inner env alone, applies the
        punishments and reports the round's end of episode. `fines` (`[A, A]`, only where
        `params` has `unjust_cost`): who fined whom, to charge `unjust_cost` per fine of a
        target whose move of the round is labelled `cooperated`.
        """

        def cost(round_extras):
            paid = params.punish_cost * given
            if fines is None:
                return paid
            cooperated = self._pad(round_extras["cooperated"].astype(jnp.float32))
            return paid + params.unjust_cost * (fines @ cooperated)

        if not self.two_stage:
            inner, ts = self._env.step(key, state.inner, inner_actions, params)
            reward = self._pad(ts.reward) - cost(ts.extras) - params.punish_fine * received
            return PunishmentState(inner, received, given), ts, reward

        zeros = jnp.zeros((self.num_agents,), jnp.float32)

        def contribute():
            inner, ts = self._env.step(key, state.inner, inner_actions, params)
            new = state.replace(
                inner=inner,
                punished=zeros,
                punishing=zeros,
                stage=jnp.int32(PUNISHMENT_STAGE),
                round_actions=inner_actions.astype(jnp.int32),
                round_ts=ts,
            )
            shown = ts.replace(terminated=jnp.array(False), truncated=jnp.array(False))
            return new, shown, self._pad(ts.reward).astype(jnp.float32)

        def punish():
            new = state.replace(
                punished=received, punishing=given, stage=jnp.int32(CONTRIBUTION_STAGE)
            )
            shown = state.round_ts.replace(extras=_unlabelled(state.round_ts.extras))
            reward = -cost(state.round_ts.extras) - params.punish_fine * received
            return new, shown, jnp.asarray(reward, jnp.float32)

        state, shown, reward = jax.lax.cond(state.stage == CONTRIBUTION_STAGE, contribute, punish)
        # `max_steps` counts env steps (two per round), so the time limit can cut a round.
        t = state.t + 1
        limit = getattr(params, "max_steps", None)
        if limit is not None:
            cut = jnp.logical_and(t >= limit, jnp.logical_not(shown.terminated))
            shown = shown.replace(truncated=jnp.logical_or(shown.truncated, cut))
        return state.replace(t=t), shown, reward

    def _round_features(self, state, ego: np.ndarray | None) -> Array:
        """`[A, P * N + 1]` two-stage observation tail: this round's inner actions, stage flag."""
        acts = jax.nn.one_hot(state.round_actions, self.num_inner_actions)  # [P, N], 0 at -1
        if ego is not None:
            acts = acts[ego].reshape(self.num_agents, -1)  # egocentric order per agent
        else:
            acts = jnp.broadcast_to(acts.reshape(-1), (self.num_agents, acts.size))
        flag = jnp.broadcast_to(
            (state.stage == PUNISHMENT_STAGE).astype(jnp.float32), (self.num_agents, 1)
        )
        return jnp.concatenate([acts, flag], axis=-1)

    def _staged_mask(self, state, contribution_mask: Array, punishment_mask: Array) -> Array:
        if not self.two_stage:
            return contribution_mask
        return jnp.where(state.stage == PUNISHMENT_STAGE, punishment_mask, contribution_mask)

    def _inner_zero_mask(self) -> Array:
        """`[A, N]` bool: only inner action 0 (what a punishment step's ignored inner part is)."""
        return jnp.asarray(
            np.broadcast_to(
                np.arange(self.num_inner_actions) == 0, (self.num_agents, self.num_inner_actions)
            )
        )

    def _nobody_mask(self) -> Array:
        """`[A, K]` bool: only the last choice, punish nobody."""
        return jnp.asarray(
            np.broadcast_to(
                np.arange(self.num_choices) == self.num_choices - 1,
                (self.num_agents, self.num_choices),
            )
        )

    def _extra_obs(self) -> int:
        return self.num_players * self.num_inner_actions + 1 if self.two_stage else 0


class DirectPunishment(_Punishment):
    """Direct (peer) punishment: pay `punish_cost` to lower another agent's reward by `punish_fine`.

    Action: `Discrete(N * (A + 1))`, `a = inner_action * (A + 1) + target`; `target = j < A`
    punishes agent `j`, `target = A` punishes nobody; punishing oneself is masked (and executed
    as nobody). Rewards: `inner_reward_i - punish_cost * [i punished someone]
    - punish_fine * (number of agents who punished i)`.

    Observation (`[D + 2A]`, flat): the inner observation flattened, then the punishments each
    agent received and gave on the previous step, in egocentric order (`i, i+1, ...`). Global
    state: the inner one plus both vectors in agent order. Extras: the inner extras plus
    `"punished"` `[A]` bool (received a punishment this step) and `"punishing"` `[A]` bool.

    Two-stage rounds (`two_stage=True`, Fehr & Gaechter 2000; see the module docstring): each
    round is a contribution step (targets masked to nobody; reward = inner reward) then a
    punishment step (inner action masked to 0 and ignored, the inner env does not step;
    reward = `-punish_cost * [punished someone] - punish_fine * (punishers of i)`). The
    observation (`[D + 2A + A*N + 1]`) adds this round's inner actions one-hot in egocentric
    order (zeros before the first round) and a flag that is 1 when the next step is a
    punishment step; the punished/punishing entries show the last punishment step's
    punishments (zeros after a contribution step). The inner episode's end is reported on the
    punishment step that closes its last round, so an episode of `R` rounds has `2R` steps;
    `params.max_steps` (if the inner params have it) counts env steps, so a time limit may cut a
    round after its contribution step. On punishment steps the inner `"cooperated"` /
    `"defected"` labels are cleared.

    Params added: `punish_cost` (default 1.0; paid per fine, a negative cost is a reward for
    fining), `punish_fine` (default 3.0, the 1:3 ratio of Fehr & Gaechter 2000; `>= 0`) and
    `unjust_cost` (default 0.0): paid on top of `punish_cost` per fine of a target whose move of
    the round is labelled `"cooperated"` (the inner env's extras, e.g. `MarkCooperation`; with
    one-step rounds, the move of the same step). Dasgupta & Musolesi's incentives, "+2 for
    fining a defector, -10 for fining a cooperator", are `punish_cost=-2, unjust_cost=12`.

    Args:
      env: an env with a `Discrete` action space (e.g. `PublicGoods`, `CoinGame`, `MatrixGame`).
      two_stage: static; two env steps per round (contribute, then punish) instead of one.
      defaults: default values of the added params (e.g. `{"punish_cost": -2.0}`).
    """

    def __init__(
        self, env: Environment, two_stage: bool = False, defaults: dict[str, float] | None = None
    ):
        super().__init__(env)
        self.two_stage = bool(two_stage)
        self.num_players = self.num_agents
        self.num_inner_actions = _discrete_n(env, "DirectPunishment")
        self.num_choices = self.num_agents + 1
        _, ts = jax.eval_shape(env.reset, jax.random.PRNGKey(0), env.default_params())
        self._labelled = "cooperated" in ts.extras

        def check(params):  # the class is shared by every env with these inner params
            check_param(params, "punish_cost", np.isfinite, "must be finite")
            check_param(params, "punish_fine", lambda v: v >= 0, "must be >= 0")
            check_param(params, "unjust_cost", np.isfinite, "must be finite")

        fields = {"punish_cost": 1.0, "punish_fine": 3.0, "unjust_cost": 0.0}
        self._params_cls = extend_params(
            type(env.default_params()), "DirectPunishment", fields, check
        )
        unknown = sorted(set(defaults or {}) - set(fields))
        if unknown:
            raise ValueError(f"DirectPunishment defaults: unknown params {unknown}")
        self._defaults = {k: float(v) for k, v in (defaults or {}).items()}
        self._ego = _ego(self.num_agents)
        choice = np.ones((self.num_agents, self.num_choices), bool)
        choice[np.arange(self.num_agents), np.arange(self.num_agents)] = False
        self._choice_mask = jnp.asarray(choice)

    def validate_params(self, params) -> None:
        """Raise `ValueError` naming the field if `params` holds impossible values (host-side)."""
        super().validate_params(params)
        if not self._labelled:
            check_param(
                params, "unjust_cost", lambda v: v == 0,
                f"must be 0: {self._env.name} does not label cooperation",
            )  # fmt: skip

    def decode(self, actions: Array) -> tuple[Array, Array]:
        """`[A]` flat actions -> (`[A]` inner actions, `[A, A]` float punishment matrix `P[i, j]`)."""
        A, K = self.num_agents, self.num_choices
        actions = self._clip(actions)
        target = actions % K
        punish = jax.nn.one_hot(target, K)[:, :A] * (1.0 - jnp.eye(A))  # [A, A]
        return actions // K, punish

    def reset(self, key, params):
        inner, ts = self._env.reset(key, params)
        state = self._initial_state(inner, ts)
        return state, self._wrap(ts, state, ts.reward)

    def step(self, key, state, actions, params):
        inner_actions, punish = self.decode(actions)
        given, received = punish.sum(axis=1), punish.sum(axis=0)
        state, ts, reward = self._step_rounds(
            key, state, inner_actions, given, received, params, punish if self._labelled else None
        )
        return state, self._wrap(ts, state, reward.astype(jnp.float32))

    def _wrap(self, ts: TimeStep, state, reward: Array) -> TimeStep:
        A = self.num_agents
        # Entries divided by A - 1 (at most A - 1 punishers / targets) so they lie in [0, 1].
        scale = 1.0 / max(A - 1, 1)
        rec, giv = state.punished * scale, state.punishing * scale
        parts = [_flat(ts.obs, A), rec[self._ego], giv[self._ego]]
        if self.two_stage:
            parts.append(self._round_features(state, self._ego))
        gs = jnp.concatenate([ts.global_state.reshape(-1).astype(jnp.float32), rec, giv])
        mask = self._staged_mask(
            state,
            _product_mask(
                ts.action_mask, self._nobody_mask() if self.two_stage else self._choice_mask
            ),
            _product_mask(self._inner_zero_mask(), self._choice_mask),
        )
        return ts.replace(
            obs=jnp.concatenate(parts, axis=-1),
            reward=reward,
            global_state=gs,
            action_mask=mask,
            extras={**ts.extras, "punished": state.punished > 0, "punishing": state.punishing > 0},
        )

    def observation_space(self, params):
        extra = 2 * self.num_agents + self._extra_obs()
        return _box_plus(self._env.observation_space(params), extra)

    def global_state_space(self, params):
        return _box_plus(self._env.global_state_space(params), 2 * self.num_agents)

    def action_space(self, params):
        return spaces.Discrete(self.num_inner_actions * self.num_choices)


class ThirdPartyPunishment(_Punishment):
    """Third-party punishment: observers who do not play may pay to punish the players.

    The inner env's `A` agents are the *players*; `M = num_observers` *observers* are added as
    agents `A .. A+M-1` (`agent_types` 1). Action: `Discrete(N * (A + 1))`,
    `a = inner_action * (A + 1) + target`. Players choose an inner action and must choose
    `target = A` (nobody: the other targets are masked); observers must choose inner action 0
    (ignored) and any target: `j < A` punishes player `j`, `A` nobody. Rewards: a player gets
    `inner_reward - punish_fine * (observers punishing it)`; an observer gets `-punish_cost` per
    punishment (its own stake in the game is zero).

    Observation (`[D + G + 1 + A]`, flat): the inner observation of a player (zeros for
    observers), the inner global state for observers (zeros for players: they keep their
    partial view), an observer flag, and the punishments each player received on the last step.
    Global state: the inner global state plus those punishments. Extras: every inner extra whose
    leading axis is `A` is padded to `A + M` with zeros/false for the observers; `"punished"`
    (a player was punished this step) and `"punishing"` (an observer punished) are `[A + M]` bool.

    Two-stage rounds (`two_stage=True`, see the module docstring): a contribution step in which
    only the players act (every target masked to nobody; players get their inner reward,
    observers 0), then a punishment step in which only the observers act (every inner action
    masked to 0 and ignored, the inner env does not step; rewards are the fines and costs
    alone). The observation (`[D + G + 1 + A + A*N + 1]`) adds this round's inner actions of
    the players one-hot (player order) and a flag that is 1 when the next step is a punishment
    step. The inner episode's end is reported on the punishment step closing its last round;
    `params.max_steps` counts env steps (two per round).

    Params added: `punish_cost` (default 1.0), `punish_fine` (default 3.0), both `>= 0`.

    Args:
      env: an env with a `Discrete` action space.
      num_observers: number of third parties `M >= 1` (static).
      two_stage: static; two env steps per round (play, then punish) instead of one.
    """

    def __init__(self, env: Environment, num_observers: int = 1, two_stage: bool = False):
        super().__init__(env)
        if int(num_observers) < 1:
            raise ValueError(f"ThirdPartyPunishment needs num_observers >= 1, got {num_observers}")
        self.two_stage = bool(two_stage)
        self.num_players = env.num_agents
        self.num_observers = int(num_observers)
        self.num_agents = self.num_players + self.num_observers
        self.num_inner_actions = _discrete_n(env, "ThirdPartyPunishment")
        self.num_choices = self.num_players + 1
        self._params_cls = extend_params(
            type(env.default_params()),
            "ThirdPartyPunishment",
            {"punish_cost": 1.0, "punish_fine": 3.0},
            _nonneg("punish_cost", "punish_fine"),
        )
        P, K = self.num_players, self.num_choices
        choice = np.zeros((self.num_agents, K), bool)
        choice[:P, P] = True  # players: nobody
        choice[P:] = True  # observers: any player or nobody
        self._choice_mask = jnp.asarray(choice)
        base = np.zeros((self.num_observers, self.num_inner_actions), bool)
        base[:, 0] = True  # observers: inner action 0 only (ignored)
        self._observer_base_mask = jnp.asarray(base)
        self._is_observer = jnp.asarray(np.arange(self.num_agents) >= P)

    @property
    def agent_types(self) -> Array:
        return self._is_observer.astype(jnp.int32)

    def reset(self, key, params):
        inner, ts = self._env.reset(key, params)
        state = self._initial_state(inner, ts)
        return state, self._wrap(ts, state, jnp.zeros((self.num_agents,), jnp.float32))

    def step(self, key, state, actions, params):
        P, K = self.num_players, self.num_choices
        actions = self._clip(actions)
        # punish[m, j]: observer m punishes player j (players' own targets are ignored).
        punish = jax.nn.one_hot(actions[P:] % K, K)[:, :P]  # [M, P]
        received = jnp.concatenate([punish.sum(axis=0), jnp.zeros((self.num_observers,))])
        given = jnp.concatenate([jnp.zeros((P,)), punish.sum(axis=1)])
        state, ts, reward = self._step_rounds(key, state, actions[:P] // K, given, received, params)
        return state, self._wrap(ts, state, reward.astype(jnp.float32))

    def _pad(self, x: Array) -> Array:
        pad = jnp.zeros((self.num_observers, *x.shape[1:]), x.dtype)
        return jnp.concatenate([x, pad], axis=0)

    def _wrap(self, ts: TimeStep, state, reward: Array) -> TimeStep:
        P, M = self.num_players, self.num_observers
        obs_p = _flat(ts.obs, P)  # [P, D]
        gs = ts.global_state.reshape(-1).astype(jnp.float32)  # [G]
        obs_part = self._pad(obs_p)
        gs_part = jnp.where(self._is_observer[:, None], gs[None], 0.0)  # [A + M, G]
        rec = state.punished[:P] / M  # in [0, 1]
        parts = [
            obs_part,
            gs_part,
            self._is_observer[:, None].astype(jnp.float32),
            jnp.broadcast_to(rec, (self.num_agents, P)),
        ]
        if self.two_stage:
            parts.append(self._round_features(state, None))
        base_mask = jnp.concatenate([ts.action_mask, self._observer_base_mask], axis=0)
        mask = self._staged_mask(
            state,
            _product_mask(base_mask, self._nobody_mask() if self.two_stage else self._choice_mask),
            _product_mask(self._inner_zero_mask(), self._choice_mask),
        )
        extras = {
            k: self._pad(v) if (hasattr(v, "shape") and v.ndim >= 1 and v.shape[0] == P) else v
            for k, v in ts.extras.items()
        }
        extras["punished"] = state.punished > 0
        extras["punishing"] = state.punishing > 0
        return ts.replace(
            obs=jnp.concatenate(parts, axis=-1),
            reward=reward,
            global_state=jnp.concatenate([gs, rec]),
            action_mask=mask,
            extras=extras,
        )

    def observation_space(self, params):
        obs = self._env.observation_space(params)
        gs = self._env.global_state_space(params)
        lo_o, hi_o = _bounds(obs, obs.flat_dim)
        lo_g, hi_g = _bounds(gs, gs.flat_dim)
        tail = 1 + self.num_players + self._extra_obs()
        # Zeros fill the part an agent does not see, so 0 must lie inside the bounds.
        lo = np.concatenate([np.minimum(lo_o, 0), np.minimum(lo_g, 0), np.zeros(tail)])
        hi = np.concatenate([np.maximum(hi_o, 0), np.maximum(hi_g, 0), np.ones(tail)])
        return spaces.Box(lo.astype(np.float32), hi.astype(np.float32), (lo.size,), jnp.float32)

    def global_state_space(self, params):
        return _box_plus(self._env.global_state_space(params), self.num_players)

    def action_space(self, params):
        return spaces.Discrete(self.num_inner_actions * self.num_choices)

    def __repr__(self) -> str:
        stages = ", two_stage=True" if self.two_stage else ""
        return f"{self.name}(players={self.num_players}, observers={self.num_observers}{stages})"


# ----------------------------------------------------------------------------- partner selection


@struct.dataclass
class PartnerSelectionState:
    """State of `PartnerSelection`."""

    last_actions: Array  # [A] int32 previous inner actions, -1 before the first round
    last_partner: Array  # [A] int32 previous chosen partners, -1 before the first round
    t: Array  # [] int32 rounds played


class PartnerSelection(Environment):
    """Partner selection: `A` agents each choose whom to play a two-player game with.

    Each round, every agent `i` picks a partner `p_i != i` and an action `a_i` of the pairwise
    game (`env`, a two-player env with a `Discrete(N)` action space whose payoff is given by
    one `step` from `reset`, e.g. a one-shot `MatrixGame`). Agent `i` then plays the game as
    player 0 against `p_i` as player 1, with the same action in every game it is part of. An
    agent's reward is the sum of its payoffs over the games it is in: the one it chose and every
    game in which it was chosen. The episode terminates after `params.selection_rounds` rounds.

    Action: `Discrete(N * A)`, `a = inner_action * A + partner` (choosing oneself is masked and
    executed as the next agent). Observation of agent `i` (`[A*N + A*A + 1]`, flat, egocentric:
    agents relabelled `i, i+1, ...`): the previous round's actions one-hot, the previous choice
    matrix `C[k, j] = [k chose j]`, and a first-round flag. Global state: the same in agent order
    plus the fraction of rounds played. Extras: `"partner"` `[A]` int32 (-1 at reset) and, if
    `cooperative_action` is given, `"cooperated"` / `"defected"` `[A]` bool.

    Params: the inner env's params (they configure the pairwise game) plus `selection_rounds`
    (default `num_rounds`); `max_steps` is the truncation limit.

    Args:
      env: the two-player pairwise game.
      num_agents: population size `A >= 2` (static).
      num_rounds: default `selection_rounds`.
      cooperative_action: the inner action that counts as cooperation (`None`: no labels).
      random_partners: the control without selection: each agent's partner is drawn uniformly
        from the others every round (the partner part of the action is masked to one value,
        so the agent only picks its game action). Same observations, rewards and extras.
    """

    def __init__(
        self,
        env: Environment,
        num_agents: int = 4,
        num_rounds: int = 20,
        cooperative_action: int | None = 0,
        random_partners: bool = False,
    ):
        if env.num_agents != 2:
            raise ValueError(
                f"PartnerSelection needs a two-player game, got {env.num_agents} agents"
            )
        if int(num_agents) < 2:
            raise ValueError(f"PartnerSelection needs num_agents >= 2, got {num_agents}")
        self._env = env
        self.num_agents = int(num_agents)
        self.num_inner_actions = _discrete_n(env, "PartnerSelection")
        if (
            cooperative_action is not None
            and not 0 <= int(cooperative_action) < self.num_inner_actions
        ):
            raise ValueError(
                f"cooperative_action must be in 0 .. {self.num_inner_actions - 1}, got {cooperative_action}"
            )
        self.cooperative_action = None if cooperative_action is None else int(cooperative_action)
        self._num_rounds = int(num_rounds)
        self._params_cls = extend_params(
            type(env.default_params()),
            "PartnerSelection",
            {"selection_rounds": self._num_rounds},
            lambda p: check_param(p, "selection_rounds", lambda v: v >= 1, "must be >= 1"),
        )
        self._ego = _ego(self.num_agents)
        self.random_partners = bool(random_partners)
        # agent i may choose any j != i; with random partners only j = i + 1 (ignored in `step`)
        choice = ~np.eye(self.num_agents, dtype=bool)
        if self.random_partners:
            choice = np.roll(np.eye(self.num_agents, dtype=bool), 1, axis=1)
        self._choice_mask = jnp.asarray(choice)

    @property
    def name(self) -> str:
        return f"PartnerSelection<{self._env.name}>"

    @property
    def unwrapped(self) -> Environment:
        return self

    def default_params(self):
        return _derive(
            self._env.default_params(), self._params_cls, {"selection_rounds": self._num_rounds}
        )

    def validate_params(self, params) -> None:
        """Raise `ValueError` naming the field if `params` holds impossible values (host-side)."""
        validate_extended(self._env, self._params_cls, params)

    def reset(self, key: PRNGKey, params) -> tuple[PartnerSelectionState, TimeStep]:
        del key
        A = self.num_agents
        state = PartnerSelectionState(
            jnp.full((A,), -1, jnp.int32), jnp.full((A,), -1, jnp.int32), jnp.int32(0)
        )
        return state, self._timestep(state, params, jnp.zeros((A,), jnp.float32), jnp.array(False))

    def pairwise_rewards(self, key: PRNGKey, actions: Array, partner: Array, params) -> Array:
        """`[A, 2]` payoffs of the games `(i, partner[i])` with actions `(a_i, a_partner[i])`."""
        A = self.num_agents
        key_reset, key_step = jax.random.split(key)
        inner0, _ = self._env.reset(key_reset, params)
        pair_actions = jnp.stack([actions, actions[partner]], axis=-1)  # [A, 2]

        def play(k, a):
            return self._env.step(k, inner0, a, params)[1].reward

        return jax.vmap(play)(jax.random.split(key_step, A), pair_actions)

    def step(self, key: PRNGKey, state: PartnerSelectionState, actions: Array, params):
        A = self.num_agents
        actions = jnp.clip(
            jnp.asarray(actions).astype(jnp.int32).reshape(A), 0, self.num_inner_actions * A - 1
        )
        inner_actions, partner = actions // A, actions % A
        partner = jnp.where(partner == jnp.arange(A), (partner + 1) % A, partner)
        if self.random_partners:
            key, key_partner = jax.random.split(key)
            offset = jax.random.randint(key_partner, (A,), 1, A)  # uniform over the others
            partner = (jnp.arange(A) + offset) % A
        pair = self.pairwise_rewards(key, inner_actions, partner, params)  # [A, 2]
        reward = pair[:, 0] + jax.ops.segment_sum(pair[:, 1], partner, num_segments=A)
        t = state.t + 1
        state = PartnerSelectionState(inner_actions, partner, t)
        return state, self._timestep(
            state, params, reward.astype(jnp.float32), t >= params.selection_rounds
        )

    def _timestep(self, state, params, reward, terminated) -> TimeStep:
        A, N = self.num_agents, self.num_inner_actions
        acts = jax.nn.one_hot(state.last_actions, N)  # [A, N], zeros at -1
        choice = jax.nn.one_hot(state.last_partner, A)  # [A, A], C[k, j]
        ego_acts = acts[self._ego].reshape(A, -1)  # [A, A*N]
        ego_choice = choice[self._ego[:, :, None], self._ego[:, None, :]].reshape(A, -1)  # [A, A*A]
        first = (state.t == 0).astype(jnp.float32)
        obs = jnp.concatenate([ego_acts, ego_choice, jnp.broadcast_to(first, (A, 1))], axis=-1)
        frac = jnp.minimum(state.t / jnp.maximum(params.selection_rounds, 1), 1.0)
        gs = jnp.concatenate([acts.reshape(-1), choice.reshape(-1), first[None], frac[None]])
        extras = {"partner": state.last_partner}
        if self.cooperative_action is not None:
            played = state.last_actions >= 0
            coop = state.last_actions == self.cooperative_action
            extras["cooperated"] = coop & played
            extras["defected"] = ~coop & played
        return TimeStep(
            obs=obs.astype(jnp.float32),
            reward=reward,
            terminated=jnp.asarray(terminated, jnp.bool_),
            truncated=jnp.logical_and(state.t >= params.max_steps, ~terminated),
            action_mask=_product_mask(jnp.ones((A, N), jnp.bool_), self._choice_mask),
            global_state=gs.astype(jnp.float32),
            extras=extras,
        )

    def observation_space(self, params):
        A, N = self.num_agents, self.num_inner_actions
        return spaces.Box(0.0, 1.0, (A * N + A * A + 1,), jnp.float32)

    def action_space(self, params):
        return spaces.Discrete(self.num_inner_actions * self.num_agents)

    def global_state_space(self, params):
        A, N = self.num_agents, self.num_inner_actions
        return spaces.Box(0.0, 1.0, (A * N + A * A + 2,), jnp.float32)

    def __repr__(self) -> str:
        extra = ", random_partners=True" if self.random_partners else ""
        return f"{self.name}(num_agents={self.num_agents}{extra})"


# ----------------------------------------------------------------------------- partner selection, gridworld


@struct.dataclass
class PairedGamesState:
    """State of `PairedGames`."""

    inner: Any  # the pair games' states, stacked: leading axis [A // 2]
    inner_obs: Array  # [A // 2, 2, D] float32 the pair games' last observations, flat
    inner_gs: Array  # [A // 2, G] float32 the pair games' last global states, flat
    inner_mask: Array  # [A // 2, 2, N] bool the pair games' last action masks, by seat
    members: Array  # [A // 2, 2] int32 agents in each pair game, by seat
    pair: Array  # [A] int32 pair game of each agent
    seat: Array  # [A] int32 seat of each agent in its pair game (0 or 1)
    partner: Array  # [A] int32 current partner, -1 before the first pairing
    choice: Array  # [A] int32 partner each agent asked for at the last choice step, -1 before
    phase: Array  # [] int32 steps into the current round (0: the choice step)
    rounds: Array  # [] int32 rounds completed
    coop: Array  # [A] int32 own-coin (cooperative) pickups in the current round
    defect: Array  # [A] int32 other-coin (defecting) pickups in the current round
    last_coop: Array  # [A] int32 the previous round's cooperative pickups
    last_defect: Array  # [A] int32 the previous round's defecting pickups


class PairedGames(Environment):
    """Partner selection in a gridworld: `A` agents play a two-player game in chosen pairs.

    Each round is one *choice step*, then `round_len` *play steps*. On the choice step every
    agent names the partner it wants, and the agents are matched into `A // 2` pairs (`match`):
    agents that named each other first, then the others in a random order, each paired with the
    partner it named if that partner is still unmatched and with a uniformly random unmatched
    agent otherwise (so an agent that nobody names is left to whoever is left). Each pair then plays a fresh episode of the inner game (`env`, a two-player env with
    `Discrete(N)` actions and `extras["cooperated"]` / `["defected"]`, e.g. `CoinGame`): the
    agent that chose sits in seat 0 and sees the game from its seat. The pair games run side by
    side (one `vmap`). After `selection_rounds` rounds the episode terminates; the inner game's
    own truncation is ignored (each pair game lasts one round).

    Action: `Discrete(N * A)`, `a = inner_action * A + partner` as in `PartnerSelection`. On a
    choice step only the partner part acts (the inner part is masked to 0) and naming oneself is
    masked; on a play step only the inner part acts (the partner part is masked to one value).
    Observation of agent `i` (`[D + 3A + 2]`, flat; agents relabelled egocentrically `i, i+1,
    ...`): its seat's inner observation flattened (zeros on a choice step), its current partner
    one-hot, every agent's cooperative and defecting pickups of the previous round divided by
    `round_len` (what agent `i` knows of the others when it chooses), a choice-step flag and the
    fraction of the episode played. Global state: the pair games' global states, the partner
    matrix, the previous round's counts and the two phase features. Extras: `"partner"` `[A]`
    int32, `"choice"` `[A]` int32 (both -1 before the first pairing) and `"cooperated"` /
    `"defected"` `[A]` bool (the inner game's labels on play steps, False on choice steps), so
    `Reputation` and `marljax.evaluation.social` read it as any labelled env; and `"punished"`
    `[A]` bool when the pair game labels punishment (e.g. `DirectPunishment`). On a play step
    the inner part of the action mask is the pair game's own mask for the agent's seat (e.g. a
    two-stage punishment step allows only "fine the partner" or "fine nobody").

    Params: the inner env's params (they configure the pair games) plus `round_len` (play steps
    per round, default 16) and `selection_rounds` (default 4); `max_steps` truncates the whole
    episode (default `NO_TIME_LIMIT`: none; each pair game lasts one round whatever it says).

    Args:
      env: the two-player pair game.
      num_agents: population size `A` (static, even, >= 4).
      round_len: default `round_len`.
      num_rounds: default `selection_rounds`.
      random_partners: the control without selection: the partner part of the action is masked
        to one value and the pairs are a uniformly random matching every round; observations,
        rewards and extras are the same.

    References: N. Anastassacos, S. Hailes and M. Musolesi, "Partner selection for the emergence
    of cooperation in multi-agent systems using reinforcement learning", AAAI 2020 (partner
    choice in a population); the Coin Game of Lerer & Peysakhovich (2017) as the pair game.
    """

    #: default `max_steps`: episodes end when their rounds do
    NO_TIME_LIMIT = 2**30

    def __init__(
        self,
        env: Environment,
        num_agents: int = 4,
        round_len: int = 16,
        num_rounds: int = 4,
        random_partners: bool = False,
    ):
        if env.num_agents != 2:
            raise ValueError(f"PairedGames needs a two-player game, got {env.num_agents} agents")
        A = int(num_agents)
        if A < 4 or A % 2:
            raise ValueError(f"PairedGames needs an even num_agents >= 4, got {num_agents}")
        _, ts = jax.eval_shape(env.reset, jax.random.PRNGKey(0), env.default_params())
        if not {"cooperated", "defected"} <= set(ts.extras):
            raise ValueError(
                f"PairedGames needs a pair game with extras 'cooperated' and 'defected'; "
                f"{env.name} has {sorted(ts.extras)}"
            )
        self._env = env
        self.num_agents = A
        self.num_inner_actions = _discrete_n(env, "PairedGames")
        self.random_partners = bool(random_partners)
        # a pair game with punishment (e.g. `DirectPunishment`): its "punished" label passes through
        self._has_punished = "punished" in ts.extras

        def check(p):
            for n in ("round_len", "selection_rounds"):
                check_param(p, n, lambda v: v >= 1, "must be >= 1")

        self._params_cls = extend_params(
            type(env.default_params()),
            "PairedGames",
            {"round_len": int(round_len), "selection_rounds": int(num_rounds)},
            check,
        )
        self._defaults = {"round_len": int(round_len), "selection_rounds": int(num_rounds)}
        self._ego = _ego(A)
        choice = ~np.eye(A, dtype=bool)
        if self.random_partners:
            choice = np.roll(np.eye(A, dtype=bool), 1, axis=1)
        self._choice_mask = jnp.asarray(choice)
        self._play_mask = jnp.asarray(np.roll(np.eye(A, dtype=bool), 1, axis=1))
        self._obs_dim = env.observation_space(env.default_params()).flat_dim
        self._gs_dim = env.global_state_space(env.default_params()).flat_dim

    @property
    def name(self) -> str:
        return f"PairedGames<{self._env.name}>"

    @property
    def unwrapped(self) -> Environment:
        return self

    def default_params(self):
        params = _derive(self._env.default_params(), self._params_cls, self._defaults)
        return params.replace(max_steps=self.NO_TIME_LIMIT)

    def validate_params(self, params) -> None:
        """Raise `ValueError` naming the field if `params` holds impossible values (host-side)."""
        validate_extended(self._env, self._params_cls, params)

    def match(self, key: PRNGKey, choice: Array) -> Array:
        """`[A // 2, 2]` pairs (seat 0 = the agent that chose) from the named partners `[A]`.

        Pairs that named each other are matched first. Then the others are visited in a uniformly
        random order: an unmatched agent takes the partner it named if that one is unmatched,
        else a uniformly random unmatched agent.
        """
        A = self.num_agents
        key_order, key_fill = jax.random.split(key)
        order = jax.random.permutation(key_order, A)
        rank = jax.random.uniform(key_fill, (A,))  # fallback preference over the others

        mutual = choice[choice] == jnp.arange(A)

        def visit(k, carry, first_pass):
            matched, members, n = carry
            i = order[k]
            free = ~matched & (jnp.arange(A) != i)
            fallback = jnp.argmax(jnp.where(free, rank, -1.0))
            j = jnp.where(free[choice[i]], choice[i], fallback)
            take = ~matched[i] & (mutual[i] if first_pass else True)
            members = jnp.where(take, members.at[n].set(jnp.stack([i, j])), members)
            matched = jnp.where(take, matched.at[i].set(True).at[j].set(True), matched)
            return matched, members, n + take.astype(jnp.int32)

        carry = (jnp.zeros((A,), bool), jnp.zeros((A // 2, 2), jnp.int32), jnp.int32(0))
        carry = jax.lax.fori_loop(0, A, lambda k, c: visit(k, c, True), carry)
        return jax.lax.fori_loop(0, A, lambda k, c: visit(k, c, False), carry)[1]

    def reset(self, key: PRNGKey, params):
        A, P = self.num_agents, self.num_agents // 2
        members = jnp.arange(A, dtype=jnp.int32).reshape(P, 2)
        inner, ts = jax.vmap(self._env.reset, in_axes=(0, None))(jax.random.split(key, P), params)
        zeros = jnp.zeros((A,), jnp.int32)
        state = PairedGamesState(
            inner=inner,
            inner_obs=self._flat_obs(ts),
            inner_gs=ts.global_state.reshape(P, -1).astype(jnp.float32),
            inner_mask=ts.action_mask.reshape(P, 2, -1).astype(bool),
            members=members,
            pair=jnp.arange(A, dtype=jnp.int32) // 2,
            seat=jnp.arange(A, dtype=jnp.int32) % 2,
            partner=jnp.full((A,), -1, jnp.int32),
            choice=jnp.full((A,), -1, jnp.int32),
            phase=jnp.int32(0),
            rounds=jnp.int32(0),
            coop=zeros,
            defect=zeros,
            last_coop=zeros,
            last_defect=zeros,
        )
        no = jnp.zeros((A,), bool)
        return state, self._timestep(state, params, jnp.zeros((A,), jnp.float32), no, no, no)

    def step(self, key: PRNGKey, state: PairedGamesState, actions: Array, params):
        A, P = self.num_agents, self.num_agents // 2
        actions = jnp.clip(
            jnp.asarray(actions).astype(jnp.int32).reshape(A), 0, self.num_inner_actions * A - 1
        )
        inner_actions, named = actions // A, actions % A
        key_match, key_random, key_reset, key_step = jax.random.split(key, 4)
        choosing = state.phase == 0

        # choice step: match, reset the pair games
        named = jnp.where(named == jnp.arange(A), (named + 1) % A, named)
        if self.random_partners:
            named = (jnp.arange(A) + jax.random.randint(key_random, (A,), 1, A)) % A
        members = self.match(key_match, named)
        pair = jnp.zeros((A,), jnp.int32).at[members.reshape(-1)].set(jnp.repeat(jnp.arange(P), 2))
        seat = jnp.zeros((A,), jnp.int32).at[members.reshape(-1)].set(jnp.tile(jnp.arange(2), P))
        partner = (
            jnp.zeros((A,), jnp.int32).at[members.reshape(-1)].set(members[:, ::-1].reshape(-1))
        )
        fresh, fresh_ts = jax.vmap(self._env.reset, in_axes=(0, None))(
            jax.random.split(key_reset, P), params
        )

        # play step: every pair game steps with its members' inner actions
        played, ts = jax.vmap(self._env.step, in_axes=(0, 0, 0, None))(
            jax.random.split(key_step, P), state.inner, inner_actions[state.members], params
        )
        by_agent = (state.pair, state.seat)
        reward = jnp.where(choosing, 0.0, ts.reward[by_agent]).astype(jnp.float32)
        coop = ~choosing & ts.extras["cooperated"][by_agent]
        defect = ~choosing & ts.extras["defected"][by_agent]
        punished = ~choosing & ts.extras["punished"][by_agent] if self._has_punished else None

        def pick(a, b):
            return jax.tree.map(lambda x, y: jnp.where(choosing, x, y), a, b)

        phase = state.phase + 1
        round_over = ~choosing & (phase > params.round_len)
        n_coop = state.coop + coop.astype(jnp.int32)
        n_defect = state.defect + defect.astype(jnp.int32)
        rounds = state.rounds + round_over.astype(jnp.int32)
        state = PairedGamesState(
            inner=pick(fresh, played),
            inner_obs=pick(self._flat_obs(fresh_ts), self._flat_obs(ts)),
            inner_gs=pick(fresh_ts.global_state, ts.global_state)
            .reshape(P, -1)
            .astype(jnp.float32),
            inner_mask=pick(fresh_ts.action_mask, ts.action_mask).reshape(P, 2, -1).astype(bool),
            members=pick(members, state.members),
            pair=pick(pair, state.pair),
            seat=pick(seat, state.seat),
            partner=pick(partner, state.partner),
            choice=pick(named, state.choice),
            phase=jnp.where(round_over, 0, phase),
            rounds=rounds,
            coop=jnp.where(round_over, 0, n_coop),
            defect=jnp.where(round_over, 0, n_defect),
            last_coop=jnp.where(round_over, n_coop, state.last_coop),
            last_defect=jnp.where(round_over, n_defect, state.last_defect),
        )
        return state, self._timestep(state, params, reward, coop, defect, punished)

    def _timestep(self, state, params, reward, coop, defect, punished) -> TimeStep:
        A = self.num_agents
        choice_now = state.phase == 0
        obs_inner = jnp.where(choice_now, 0.0, state.inner_obs[state.pair, state.seat])  # [A, D]
        gs_inner = state.inner_gs.reshape(-1)
        partner_1h = jax.nn.one_hot(state.partner, A)  # [A, A], zeros at -1
        ego_partner = partner_1h[jnp.arange(A)[:, None], self._ego]  # [A, A]
        scale = 1.0 / jnp.maximum(params.round_len, 1)
        counts = jnp.stack([state.last_coop, state.last_defect], -1) * scale  # [A, 2]
        ego_counts = counts[self._ego].reshape(A, 2 * A)
        total = params.selection_rounds * (params.round_len + 1)
        played = state.rounds * (params.round_len + 1) + state.phase
        frac = jnp.minimum(played / jnp.maximum(total, 1), 1.0).astype(jnp.float32)
        flags = jnp.stack([choice_now.astype(jnp.float32), frac])
        obs = jnp.concatenate(
            [obs_inner, ego_partner, ego_counts, jnp.broadcast_to(flags, (A, 2))], axis=-1
        )
        gs = jnp.concatenate([gs_inner, partner_1h.reshape(-1), counts.reshape(-1), flags])
        mask = _product_mask(
            jnp.where(
                choice_now,
                (jnp.arange(self.num_inner_actions) == 0)[None],
                state.inner_mask[state.pair, state.seat],  # the pair game's mask for the seat
            ),
            jnp.where(choice_now, self._choice_mask, self._play_mask),
        )
        terminated = state.rounds >= params.selection_rounds
        return TimeStep(
            obs=obs.astype(jnp.float32),
            reward=reward,
            terminated=terminated,
            truncated=(played >= params.max_steps) & ~terminated,
            action_mask=mask,
            global_state=gs.astype(jnp.float32),
            extras={
                "partner": state.partner,
                "choice": state.choice,
                "cooperated": coop,
                "defected": defect,
                **({"punished": punished} if self._has_punished else {}),
            },
        )

    def _flat_obs(self, ts: TimeStep) -> Array:
        """`[P, 2, D]` float32: the pair games' observations, flattened per seat."""
        return ts.obs.reshape(self.num_agents // 2, 2, -1).astype(jnp.float32)

    def observation_space(self, params):
        A = self.num_agents
        return spaces.Box(0.0, 1.0, (self._obs_dim + 3 * A + 2,), jnp.float32)

    def action_space(self, params):
        return spaces.Discrete(self.num_inner_actions * self.num_agents)

    def global_state_space(self, params):
        A = self.num_agents
        dim = (A // 2) * self._gs_dim + A * A + 2 * A + 2
        return spaces.Box(0.0, 1.0, (dim,), jnp.float32)

    def __repr__(self) -> str:
        extra = ", random_partners=True" if self.random_partners else ""
        return f"{self.name}(num_agents={self.num_agents}{extra})"


# ----------------------------------------------------------------------------- reputation


@struct.dataclass
class ReputationState:
    """State of `Reputation`."""

    inner: Any  # the inner env's state
    reputation: Array  # [A] float32 public scores in [0, 1]


class Reputation(_ParamsWrapper):
    """A public reputation score per agent, updated from its observed actions, in every observation.

    After each step, an agent that made a labelled choice (inner `extras["cooperated"]` or, if the
    inner env has it, `extras["defected"]`) updates its score as
    `rep <- reputation_decay * rep + (1 - reputation_decay) * cooperated` (an image score with
    exponential forgetting); other agents keep theirs. Scores start at `reputation_init`.

    Observation (`[D + A]`, flat): the inner observation flattened, then every agent's score in
    egocentric order (`i, i+1, ...`). Global state: the inner one plus the scores in agent order.
    Extras: the inner ones plus `"reputation"` `[A]` float32.

    Params added: `reputation_decay` (default 0.8) and `reputation_init` (default 0.5), in
    `[0, 1]`.

    Args:
      env: an env whose extras have `"cooperated"` `[A]` bool (e.g. `PublicGoods`, `CoinGame`,
        `PartnerSelection`, or a `MatrixGame` inside `MarkCooperation`).

    Raises:
      ValueError: at construction, if the env's extras lack `"cooperated"`.
    """

    def __init__(self, env: Environment):
        super().__init__(env)
        _, ts = jax.eval_shape(env.reset, jax.random.PRNGKey(0), env.default_params())
        if "cooperated" not in ts.extras:
            raise ValueError(
                f"Reputation needs an env whose timestep.extras has 'cooperated' ([A] bool); "
                f"{env.name} has {sorted(ts.extras)}. Wrap a matrix game in MarkCooperation first."
            )
        self._has_defected = "defected" in ts.extras

        def unit(p):
            for n in ("reputation_decay", "reputation_init"):
                check_param(p, n, lambda v: (v >= 0) & (v <= 1), "must lie in [0, 1]")

        self._params_cls = extend_params(
            type(env.default_params()),
            "Reputation",
            {"reputation_decay": 0.8, "reputation_init": 0.5},
            unit,
        )
        self._ego = _ego(self.num_agents)

    def reset(self, key, params):
        inner, ts = self._env.reset(key, params)
        rep = jnp.full((self.num_agents,), 1.0, jnp.float32) * params.reputation_init
        state = ReputationState(inner, rep.astype(jnp.float32))
        return state, self._wrap(ts, state)

    def step(self, key, state: ReputationState, actions, params):
        inner, ts = self._env.step(key, state.inner, actions, params)
        coop = ts.extras["cooperated"]
        acted = coop | ts.extras["defected"] if self._has_defected else jnp.ones_like(coop)
        d = params.reputation_decay
        updated = d * state.reputation + (1.0 - d) * coop.astype(jnp.float32)
        rep = jnp.where(acted, updated, state.reputation).astype(jnp.float32)
        state = ReputationState(inner, rep)
        return state, self._wrap(ts, state)

    def _wrap(self, ts: TimeStep, state: ReputationState) -> TimeStep:
        rep = state.reputation
        return ts.replace(
            obs=jnp.concatenate([_flat(ts.obs, self.num_agents), rep[self._ego]], axis=-1),
            global_state=jnp.concatenate([ts.global_state.reshape(-1).astype(jnp.float32), rep]),
            extras={**ts.extras, "reputation": rep},
        )

    def observation_space(self, params):
        return _box_plus(self._env.observation_space(params), self.num_agents)

    def global_state_space(self, params):
        return _box_plus(self._env.global_state_space(params), self.num_agents)


# ----------------------------------------------------------------------------- labels


class MarkCooperation(Wrapper):
    """Label each discrete action as cooperation or defection in `extras` (for metrics, reputation).

    Adds `"cooperated"` `[A]` bool (the action is `cooperative_action`) and `"defected"` `[A]`
    bool (any other action) after each step; both are false at reset. Actions are clipped into
    range as the inner env does. Everything else is the inner env's. Use it on matrix-style
    dilemmas (by marljax's convention action 0 is the cooperative one: cooperate, stag).

    Args:
      env: an env with a `Discrete` action space.
      cooperative_action: the action that counts as cooperation.
    """

    def __init__(self, env: Environment, cooperative_action: int = 0):
        super().__init__(env)
        n = _discrete_n(env, "MarkCooperation")
        if not 0 <= int(cooperative_action) < n:
            raise ValueError(
                f"cooperative_action must be in 0 .. {n - 1}, got {cooperative_action}"
            )
        self.cooperative_action = int(cooperative_action)
        self._n = n

    def reset(self, key, params):
        state, ts = self._env.reset(key, params)
        false = jnp.zeros((self.num_agents,), jnp.bool_)
        return state, ts.replace(extras={**ts.extras, "cooperated": false, "defected": false})

    def step(self, key, state, actions, params):
        state, ts = self._env.step(key, state, actions, params)
        a = jnp.clip(
            jnp.asarray(actions).astype(jnp.int32).reshape(self.num_agents), 0, self._n - 1
        )
        coop = a == self.cooperative_action
        return state, ts.replace(extras={**ts.extras, "cooperated": coop, "defected": ~coop})
