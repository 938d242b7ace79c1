"""The Coin Game: a sequential social dilemma on a small torus (2 or more players).

Every agent has a colour. One coin lies on the grid; its colour is one agent's (its *owner*).
An agent that steps onto the coin picks it up and earns `params.pickup_reward` (+1), whatever
the coin's colour; when an agent picks up a coin of another agent's colour, the owner receives
`params.owner_penalty` (-2). A new coin of a random colour then appears on a random cell not
occupied by an agent. Selfishly grabbing every coin is the defection; taking only one's own
coins is the cooperation (the sum of rewards is higher).

References:
  A. Lerer and A. Peysakhovich, "Maintaining cooperation in complex social dilemmas using deep
  reinforcement learning", arXiv:1707.01068, 2017.
  J. Foerster et al., "Learning with Opponent-Learning Awareness", AAMAS 2018 (the 3x3 version).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core import spaces
from marljax.core.types import Array, Environment, EnvParams, PRNGKey, TimeStep

#: (row, col) displacement of the five actions: up, down, left, right, stay.
MOVES = np.array([[-1, 0], [1, 0], [0, -1], [0, 1], [0, 0]], np.int32)
ACTION_NAMES = ("up", "down", "left", "right", "stay")


@struct.dataclass
class CoinGameParams(EnvParams):
    """Traced parameters of the `CoinGame`.

    Attributes:
      max_steps: episode length; the episode is *truncated* after this many steps (the game
        itself never terminates).
      pickup_reward: reward of an agent that picks up any coin.
      owner_penalty: reward of the coin's owner when another agent picks it up (once per other
        agent that picks it up on the same step).
    """

    max_steps: int = 50
    pickup_reward: float = 1.0
    owner_penalty: float = -2.0


def check_coin_game_params(params: CoinGameParams) -> None:
    """Raise `ValueError` for impossible concrete parameter values (traced values are skipped)."""
    check_param(params, "max_steps", lambda v: v >= 1, "must be >= 1")


@struct.dataclass
class CoinGameState:
    """State of a Coin Game episode."""

    agent_pos: Array  # [A, 2] int32 (row, col) of each agent
    coin_pos: Array  # [2] int32 (row, col) of the coin
    coin_owner: Array  # [] int32 index of the agent whose colour the coin has
    t: Array  # [] int32 steps taken in this episode


class CoinGame(Environment[CoinGameState, CoinGameParams]):
    """The Coin Game on a `grid_size x grid_size` torus.

    Actions (`Discrete(5)`, all always legal): 0 up, 1 down, 2 left, 3 right, 4 stay; moves wrap
    around the edges (torus). Agents may share a cell. Out-of-range actions are clipped into
    `0 .. 4` (use `ValidateActions` to raise instead). If several agents step onto the coin at
    once, each earns `pickup_reward` and the owner pays `owner_penalty` once per non-owner.

    Observation of agent `i`: `[S, S, 4]` uint8 0/1 channels (own position, other agents'
    positions, coin of own colour, coin of another colour), in absolute coordinates or, with
    `egocentric=True`, shifted on the torus so that agent `i` is at the centre cell
    `(S // 2, S // 2)`. The global state is every agent's position one-hot (`[A, S*S]`), the
    coin's position one-hot (`[S*S]`), its owner one-hot (`[A]`) and the fraction of the episode
    elapsed, flattened: `[A*S*S + S*S + A + 1]`.

    `timestep.extras`: `"cooperated"` `[A]` bool (picked up a coin of its own colour this step)
    and `"defected"` `[A]` bool (picked up another agent's coin), read by
    `marljax.evaluation.social` (cooperation rate = own-coin pickups / all pickups).

    Args:
      num_agents: number of agents `A` (static, >= 1; 2 in the published game).
      grid_size: side `S` of the torus (static: it fixes the observation shape); needs
        `S * S >= A + 1` so that agents and the coin start on distinct cells.
      egocentric: egocentric observations (static).

    Raises:
      ValueError: impossible sizes, at construction (so at `make` time).
    """

    num_actions: int = 5

    def __init__(self, num_agents: int = 2, grid_size: int = 3, egocentric: bool = False):
        num_agents, grid_size = int(num_agents), int(grid_size)
        if num_agents < 1:
            raise ValueError(f"CoinGame needs num_agents >= 1, got {num_agents}")
        if grid_size < 1 or grid_size * grid_size < num_agents + 1:
            raise ValueError(
                f"CoinGame grid_size={grid_size} is too small: a {grid_size}x{grid_size} grid has "
                f"{grid_size * grid_size} cells but {num_agents} agents + 1 coin need "
                f"{num_agents + 1} distinct cells at reset"
            )
        self.num_agents = num_agents
        self.grid_size = grid_size
        self.egocentric = bool(egocentric)
        self._moves = jnp.asarray(MOVES)

    def __repr__(self) -> str:
        return (
            f"CoinGame(num_agents={self.num_agents}, grid_size={self.grid_size}, "
            f"egocentric={self.egocentric})"
        )

    def default_params(self) -> CoinGameParams:
        return CoinGameParams()

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        """Rewards of either sign give a valid game (see `Environment.param_ranges`)."""
        return {"pickup_reward": (-2.0, 2.0), "owner_penalty": (-4.0, 0.0)}

    def validate_params(self, params) -> None:
        """Raise `ValueError` naming the field if `params` holds impossible values (host-side)."""
        check_coin_game_params(params)

    # ------------------------------------------------------------------ dynamics

    def reset(self, key: PRNGKey, params: CoinGameParams) -> tuple[CoinGameState, TimeStep]:
        S, A = self.grid_size, self.num_agents
        u = jax.random.uniform(key, (S * S + 1,))
        cells = _distinct_cells(u[: S * S], A + 1)
        pos = jnp.stack([cells // S, cells % S], axis=-1)  # [A + 1, 2]
        state = CoinGameState(
            agent_pos=pos[:A],
            coin_pos=pos[A],
            coin_owner=self._owner(u[S * S]),
            t=jnp.int32(0),
        )
        zeros_b = jnp.zeros((A,), jnp.bool_)
        reward = jnp.zeros((A,), jnp.float32)
        return state, self._timestep(state, params, reward, zeros_b, zeros_b)

    def step(
        self, key: PRNGKey, state: CoinGameState, actions: Array, params: CoinGameParams
    ) -> tuple[CoinGameState, TimeStep]:
        S, A = self.grid_size, self.num_agents
        actions = jnp.clip(jnp.asarray(actions).astype(jnp.int32).reshape(A), 0, 4)
        agent_pos = (state.agent_pos + self._moves[actions]) % S  # [A, 2]
        picked = jnp.all(agent_pos == state.coin_pos[None], axis=-1)  # [A]
        owner = jnp.arange(A) == state.coin_owner  # [A]
        stolen = jnp.sum(picked & ~owner).astype(jnp.float32)  # [] non-owners who picked it
        reward = (
            params.pickup_reward * picked.astype(jnp.float32)
            + params.owner_penalty * stolen * owner.astype(jnp.float32)
        ).astype(jnp.float32)

        any_picked = jnp.any(picked)
        new_pos, new_owner = self._respawn(key, agent_pos)
        state = CoinGameState(
            agent_pos=agent_pos,
            coin_pos=jnp.where(any_picked, new_pos, state.coin_pos),
            coin_owner=jnp.where(any_picked, new_owner, state.coin_owner),
            t=state.t + 1,
        )
        return state, self._timestep(state, params, reward, picked & owner, picked & ~owner)

    def _owner(self, u: Array) -> Array:
        """`[]` int32 uniform agent index from a `[]` uniform draw in `[0, 1)`."""
        return jnp.minimum(jnp.floor(u * self.num_agents), self.num_agents - 1).astype(jnp.int32)

    def _respawn(self, key: PRNGKey, agent_pos: Array) -> tuple[Array, Array]:
        """A uniform cell free of agents and a uniform owner for the next coin (one draw)."""
        S = self.grid_size
        u = jax.random.uniform(key, (S * S + 1,))
        cells = agent_pos[:, 0] * S + agent_pos[:, 1]  # [A]
        occupied = jnp.any(cells[:, None] == jnp.arange(S * S)[None, :], axis=0)  # [SS], no scatter
        # argmax of i.i.d. uniforms over the free cells is a uniform free cell.
        cell = jnp.argmax(jnp.where(occupied, -1.0, u[: S * S])).astype(jnp.int32)
        return jnp.stack([cell // S, cell % S]), self._owner(u[S * S])

    # ------------------------------------------------------------------ observations

    def _timestep(
        self,
        state: CoinGameState,
        params: CoinGameParams,
        reward: Array,
        cooperated: Array,
        defected: Array,
    ) -> TimeStep:
        S, A = self.grid_size, self.num_agents
        own = jnp.arange(A) == state.coin_owner  # [A]
        cells = state.agent_pos[:, 0] * S + state.agent_pos[:, 1]  # [A]
        coin_cell = state.coin_pos[0] * S + state.coin_pos[1]  # []
        pos_1h = jax.nn.one_hot(cells, S * S, dtype=jnp.float32)  # [A, SS] absolute
        coin_abs = jax.nn.one_hot(coin_cell, S * S, dtype=jnp.float32)  # [SS]
        if self.egocentric:
            # Shift the torus so that agent i sits at the centre cell.
            offset = S // 2 - state.agent_pos  # [A, 2]
            rel = (state.agent_pos[None, :, :] + offset[:, None, :]) % S  # [A, A, 2] j seen by i
            rel_coin = (state.coin_pos[None, :] + offset) % S  # [A, 2]
            agents_1h = jax.nn.one_hot(rel[..., 0] * S + rel[..., 1], S * S)  # [A, A, SS]
            coin_1h = jax.nn.one_hot(rel_coin[:, 0] * S + rel_coin[:, 1], S * S)  # [A, SS]
            self_1h = agents_1h[jnp.arange(A), jnp.arange(A)]  # [A, SS]
            all_1h = agents_1h.sum(axis=1)  # [A, SS]
        else:
            coin_1h = coin_abs[None, :]  # [1, SS]
            self_1h = pos_1h
            all_1h = pos_1h.sum(axis=0, keepdims=True)  # [1, SS]
        others = jnp.minimum(all_1h - self_1h, 1.0)  # [A, SS]
        own_f = own.astype(jnp.float32)[:, None]
        obs = jnp.stack([self_1h, others, coin_1h * own_f, coin_1h * (1.0 - own_f)], axis=-1)
        # uint8 (0/1): a quarter of float32's memory traffic; agents cast observations to float.
        obs = obs.reshape(A, S, S, 4).astype(jnp.uint8)

        frac = jnp.minimum(state.t / jnp.maximum(params.max_steps, 1), 1.0)
        global_state = jnp.concatenate(
            [pos_1h.reshape(-1), coin_abs, own.astype(jnp.float32), jnp.reshape(frac, (1,))]
        ).astype(jnp.float32)
        return TimeStep(
            obs=obs,
            reward=reward,
            terminated=jnp.array(False),
            truncated=state.t >= params.max_steps,
            action_mask=jnp.ones((A, self.num_actions), jnp.bool_),
            global_state=global_state,
            extras={"cooperated": cooperated, "defected": defected},
        )

    def observation_space(self, params: CoinGameParams) -> spaces.Box:
        return spaces.Box(0, 1, (self.grid_size, self.grid_size, 4), jnp.uint8)

    def action_space(self, params: CoinGameParams) -> spaces.Discrete:
        return spaces.Discrete(self.num_actions)

    def global_state_space(self, params: CoinGameParams) -> spaces.Box:
        S, A = self.grid_size, self.num_agents
        return spaces.Box(0.0, 1.0, (A * S * S + S * S + A + 1,), jnp.float32)


def _distinct_cells(u: Array, k: int) -> Array:
    """`[k]` int32 indices of the `k` largest of the i.i.d. uniforms `u` `[C]`, largest first.

    They are `k` distinct cells drawn uniformly at random. For small grids the ranks are computed
    with `C * C` comparisons, much cheaper on CPU than a sort (`random.permutation`) or `top_k`.
    """
    if u.shape[0] > 256:
        return jax.lax.top_k(u, k)[1].astype(jnp.int32)
    rank = jnp.sum(u[None, :] > u[:, None], axis=1)  # [C] number of larger draws
    return jnp.argmax(rank[:, None] == jnp.arange(k)[None, :], axis=0).astype(jnp.int32)


# ------------------------------------------------------------------ param validation


def check_param(params, name: str, ok, message: str) -> None:
    """Raise `ValueError` if the concrete value of `params.<name>` fails `ok`.

    Args:
      params: a params dataclass.
      name: the field to check.
      ok: elementwise predicate on the value as a numpy array (e.g. `lambda v: v >= 0`).
      message: what the value must satisfy, for the error (e.g. `"must be >= 0"`).

    Traced (abstract) values are skipped: the check is meant for concrete values set by `make`.
    """
    value = getattr(params, name)
    if isinstance(value, jax.core.Tracer):
        return
    try:
        arr = np.asarray(value)
    except Exception:  # noqa: BLE001  (abstract placeholders inside JAX transformations)
        return
    if arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
        return
    if not bool(np.all(ok(arr))):
        raise ValueError(f"{type(params).__name__}.{name} {message}, got {arr.tolist()}")
