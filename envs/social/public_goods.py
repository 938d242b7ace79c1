"""The repeated linear public goods game (N players, endowment, multiplier).

Each round every agent receives `params.endowment`, contributes a part `c_i` of it to a public
pot, and receives `endowment - c_i + r * sum_j c_j / N` with `r = params.multiplier`. With
`1 < r < N` contributing everything maximises the group's total while contributing nothing is
every agent's dominant strategy: a social dilemma.

Reference: J. O. Ledyard, "Public goods: a survey of experimental research", Handbook of
Experimental Economics, 1995; E. Fehr and S. Gaechter, "Cooperation and punishment in public
goods experiments", American Economic Review 90(4), 2000.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core import spaces
from marljax.core.types import Array, Environment, EnvParams, PRNGKey, TimeStep
from marljax.envs.social.coin_game import check_param


@struct.dataclass
class PublicGoodsParams(EnvParams):
    """Traced parameters of `PublicGoods`.

    Attributes:
      max_steps: time limit (truncation); large by default so `num_rounds` decides the length.
      num_rounds: the game *terminates* after this many rounds.
      endowment: what each agent receives every round (> 0).
      multiplier: `r >= 0`, the pot is multiplied by `r` and shared equally among the `N` agents.
      cooperation_threshold: a contribution of at least this fraction of the endowment counts as
        cooperation in `extras["cooperated"]` (in `[0, 1]`).
    """

    max_steps: int = 1000
    num_rounds: int = 10
    endowment: float = 10.0
    multiplier: float = 1.6
    cooperation_threshold: float = 0.5


def check_public_goods_params(params: PublicGoodsParams) -> None:
    """Raise `ValueError` for impossible concrete parameter values (traced values are skipped)."""
    check_param(params, "max_steps", lambda v: v >= 1, "must be >= 1")
    check_param(params, "num_rounds", lambda v: v >= 1, "must be >= 1")
    check_param(params, "endowment", lambda v: v > 0, "must be > 0")
    check_param(params, "multiplier", lambda v: v >= 0, "(the multiplier r) must be >= 0")
    check_param(
        params, "cooperation_threshold", lambda v: (v >= 0) & (v <= 1), "must lie in [0, 1]"
    )


@struct.dataclass
class PublicGoodsState:
    """State of a public goods episode."""

    last_contribution: Array  # [A] float32 previous round's contributed fractions, 0 at first
    t: Array  # [] int32 rounds played


def public_goods_payoff(contribution: Array, endowment: Array, multiplier: Array) -> Array:
    """Payoffs of one round of the linear public goods game.

    Args:
      contribution: `[A]` amounts contributed (each in `[0, endowment]`).
      endowment: `[]` each agent's endowment.
      multiplier: `[]` the factor `r` applied to the pot.

    Returns:
      `[A]` float32, `endowment - c_i + r * sum(c) / A`.
    """
    num_agents = contribution.shape[-1]
    pot = jnp.sum(contribution, axis=-1, keepdims=True)
    return (endowment - contribution + multiplier * pot / num_agents).astype(jnp.float32)


class PublicGoods(Environment[PublicGoodsState, PublicGoodsParams]):
    """The repeated public goods game with discrete or continuous contributions.

    Actions: with `continuous=False`, `Discrete(num_levels)`: level `k` contributes the fraction
    `k / (num_levels - 1)` of the endowment (all levels always legal; out-of-range levels are
    clipped); with `continuous=True`, `Box(0, 1, (1,))`: the fraction contributed (clipped into
    `[0, 1]`).

    Observation of agent `i` (`[A + 2]` float32): the fractions contributed in the previous round
    by agents `i, i+1, ..., i-1` (egocentric order; zeros before the first round), a first-round
    flag and the fraction of rounds played. The global state (`[A + 2]`) is the same in agent
    order. Terminates after `params.num_rounds` rounds; truncated at `params.max_steps`.

    `timestep.extras`: `"cooperated"` `[A]` bool (contributed at least
    `cooperation_threshold * endowment`), `"defected"` `[A]` bool (its negation after a round;
    false at reset) and `"contribution"` `[A]` float32 fractions contributed.

    Args:
      num_agents: number of players `A` (static, >= 2).
      continuous: continuous (Box) contributions instead of discrete levels (static).
      num_levels: number of discrete contribution levels (static, >= 2).

    Raises:
      ValueError: impossible sizes, at construction (so at `make` time).
    """

    def __init__(self, num_agents: int = 4, continuous: bool = False, num_levels: int = 5):
        num_agents, num_levels = int(num_agents), int(num_levels)
        if num_agents < 2:
            raise ValueError(f"PublicGoods needs num_agents >= 2, got {num_agents}")
        if num_levels < 2:
            raise ValueError(f"PublicGoods needs num_levels >= 2, got {num_levels}")
        self.num_agents = num_agents
        self.continuous = bool(continuous)
        self.num_levels = num_levels
        a = np.arange(num_agents)
        self._ego_index = (a[:, None] + a[None, :]) % num_agents  # [A, A] row i: i, i+1, ...

    def __repr__(self) -> str:
        kind = "continuous" if self.continuous else f"{self.num_levels} levels"
        return f"PublicGoods(num_agents={self.num_agents}, {kind})"

    def default_params(self) -> PublicGoodsParams:
        return PublicGoodsParams()

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        """Values accepted by `validate_params` (see `Environment.param_ranges`)."""
        return {
            "num_rounds": (1, 6),
            "endowment": (0.1, 20.0),
            "multiplier": (0.0, 5.0),
            "cooperation_threshold": (0.0, 1.0),
        }

    def validate_params(self, params) -> None:
        """Raise `ValueError` naming the field if `params` holds impossible values (host-side)."""
        check_public_goods_params(params)

    def reset(self, key: PRNGKey, params: PublicGoodsParams) -> tuple[PublicGoodsState, TimeStep]:
        del key  # deterministic start
        A = self.num_agents
        state = PublicGoodsState(jnp.zeros((A,), jnp.float32), jnp.int32(0))
        false = jnp.zeros((A,), jnp.bool_)
        return state, self._timestep(
            state, params, jnp.zeros((A,), jnp.float32), false, false, jnp.array(False)
        )

    def contribution_fraction(self, actions: Array) -> Array:
        """`[A]` float32 fractions of the endowment contributed by `actions` (clipped)."""
        A = self.num_agents
        if self.continuous:
            return jnp.clip(jnp.asarray(actions, jnp.float32).reshape(A), 0.0, 1.0)
        levels = jnp.clip(jnp.asarray(actions).astype(jnp.int32).reshape(A), 0, self.num_levels - 1)
        return levels.astype(jnp.float32) / (self.num_levels - 1)

    def step(
        self, key: PRNGKey, state: PublicGoodsState, actions: Array, params: PublicGoodsParams
    ) -> tuple[PublicGoodsState, TimeStep]:
        del key
        frac = self.contribution_fraction(actions)
        reward = public_goods_payoff(frac * params.endowment, params.endowment, params.multiplier)
        t = state.t + 1
        terminated = t >= params.num_rounds
        coop = frac >= params.cooperation_threshold
        state = PublicGoodsState(frac, t)
        return state, self._timestep(state, params, reward, coop, ~coop, terminated)

    def _timestep(self, state, params, reward, cooperated, defected, terminated) -> TimeStep:
        A = self.num_agents
        first = (state.t == 0).astype(jnp.float32)
        frac = jnp.minimum(state.t / jnp.maximum(params.num_rounds, 1), 1.0).astype(jnp.float32)
        tail = jnp.stack([first, frac])
        obs = jnp.concatenate(
            [state.last_contribution[self._ego_index], jnp.broadcast_to(tail, (A, 2))], axis=-1
        )
        truncated = jnp.logical_and(state.t >= params.max_steps, ~terminated)
        return TimeStep(
            obs=obs,
            reward=reward,
            terminated=jnp.asarray(terminated, jnp.bool_),
            truncated=truncated,
            action_mask=jnp.ones((A, 0 if self.continuous else self.num_levels), jnp.bool_),
            global_state=jnp.concatenate([state.last_contribution, tail]),
            extras={
                "cooperated": cooperated,
                "defected": defected,
                "contribution": state.last_contribution,
            },
        )

    def observation_space(self, params: PublicGoodsParams) -> spaces.Box:
        return spaces.Box(0.0, 1.0, (self.num_agents + 2,), jnp.float32)

    def action_space(self, params: PublicGoodsParams) -> spaces.Space:
        if self.continuous:
            return spaces.Box(0.0, 1.0, (1,), jnp.float32)
        return spaces.Discrete(self.num_levels)

    def global_state_space(self, params: PublicGoodsParams) -> spaces.Box:
        return spaces.Box(0.0, 1.0, (self.num_agents + 2,), jnp.float32)
