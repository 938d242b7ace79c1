"""The Coin Game with JaxMARL's rules: one coin per colour, restarts every 10 steps.

The same dilemma as `marljax.envs.social.coin_game` (a coin picked up by another agent costs its
owner), with the rules of JaxMARL 0.2.0's `coin_game`, so that results and speeds can be compared
with it directly:

- one coin of each agent's colour lies on the grid at all times (two coins for two agents);
- agents and coins are placed independently and uniformly on all cells, at reset and when a coin
  respawns, so they may share cells (a coin may even appear under an agent: it is picked up only
  when an agent steps onto its cell);
- an episode of `max_steps = 100` steps is 10 *inner* episodes of `inner_steps = 10` steps: on
  every 10th step all positions are redrawn and the rewards of that step are zeroed;
- the actions are in JaxMARL's order: 0 right, 1 left, 2 row + 1, 3 row - 1, 4 stay.

References:
  A. Lerer and A. Peysakhovich, "Maintaining cooperation in complex social dilemmas using deep
  reinforcement learning", arXiv:1707.01068, 2017.
  A. Rutherford et al., "JaxMARL: Multi-Agent RL Environments and Algorithms in JAX", NeurIPS
  Datasets and Benchmarks 2024 (the `coin_game` environment, version 0.2.0).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core import spaces
from marljax.core.types import Array, Environment, EnvParams, PRNGKey, TimeStep
from marljax.envs.social.coin_game import check_param

#: (row, col) displacement of the five actions, in JaxMARL's order.
JAXMARL_MOVES = np.array([[0, 1], [0, -1], [1, 0], [-1, 0], [0, 0]], np.int32)
JAXMARL_ACTION_NAMES = ("right", "left", "row+1", "row-1", "stay")


@struct.dataclass
class CoinGameJaxMARLParams(EnvParams):
    """Traced parameters of `CoinGameJaxMARL` (defaults: JaxMARL's `coin_game`).

    Attributes:
      max_steps: episode length; the episode is *truncated* after this many steps (JaxMARL's
        `num_inner_steps * num_outer_steps`, 10 x 10).
      inner_steps: every `inner_steps`-th step restarts the board (all positions redrawn, the
        step's rewards zeroed); JaxMARL's `num_inner_steps`.
      own_coin_reward: reward for picking up a coin of one's own colour (scalar or `[A]`).
      other_coin_reward: reward for picking up a coin of another agent's colour (scalar or `[A]`).
      owner_penalty: reward of a coin's owner each time another agent picks it up (scalar or
        `[A]`, indexed by the owner).
      shared_rewards: if true, every agent receives the sum of all agents' rewards.
    """

    max_steps: int = 100
    inner_steps: int = 10
    own_coin_reward: float = 1.0
    other_coin_reward: float = 1.0
    owner_penalty: float = -2.0
    shared_rewards: bool = False


@struct.dataclass
class CoinGameJaxMARLState:
    """State of a `CoinGameJaxMARL` episode."""

    agent_pos: Array  # [A, 2] int32 (row, col) of each agent
    coin_pos: Array  # [A, 2] int32 (row, col) of the coin of agent i's colour
    t: Array  # [] int32 steps taken in this episode (inner episodes included)


@struct.dataclass
class CoinDraws:
    """The random part of one step: cells drawn before knowing whether they are used.

    Every cell is drawn independently and uniformly from all `S * S` cells.
    """

    respawn_pos: Array  # [A, 2] int32 new cell of coin j, used if coin j is picked up
    restart_agent_pos: Array  # [A, 2] int32 agent cells, used if the inner episode restarts
    restart_coin_pos: Array  # [A, 2] int32 coin cells, used if the inner episode restarts


class CoinGameJaxMARL(Environment[CoinGameJaxMARLState, CoinGameJaxMARLParams]):
    """The Coin Game with JaxMARL's rules: a coin per colour, 10 x 10-step episodes, its actions.

    Actions (`Discrete(5)`, all always legal): 0 right, 1 left, 2 row + 1, 3 row - 1, 4 stay
    (JaxMARL's order); moves wrap around the edges (torus). Out-of-range actions are clipped.
    After the move, agent `i` standing on the coin of agent `j` picks it up: it earns
    `own_coin_reward` if `i == j`, else `other_coin_reward` and `j` receives `owner_penalty`.
    Several agents may pick up the same coin, and one agent several coins lying on one cell.
    Each picked-up coin respawns on a uniform cell (agents' cells included). On every
    `inner_steps`-th step the board restarts: agents and coins are redrawn on uniform cells and
    every reward of the step is zero. The game never terminates; it is truncated after
    `max_steps` steps.

    Observation of agent `i`: `[S, S, 4]` uint8 0/1 channels (own position, other agents'
    positions, coin of own colour, coins of other colours), in absolute coordinates or, with
    `egocentric=True`, shifted on the torus so that agent `i` is at the centre cell
    `(S // 2, S // 2)`. For 2 agents on 3x3 this is JaxMARL's observation of either agent
    (`cnn=True`; its default flattens it to `[36]` in the same row-major order). The global
    state is every agent's and every coin's position one-hot and the elapsed fractions of the
    inner and of the whole episode: `[2*A*S*S + 2]` float32.

    `timestep.extras`: `"cooperated"` `[A]` bool (picked up its own coin this step),
    `"defected"` `[A]` bool (picked up another agent's coin), both false on restart steps (whose
    rewards are zeroed), and `"inner_episode_done"` `[]` bool (this step restarted the board;
    JaxMARL's `info["inner_episode_done"]`).

    Args:
      num_agents: number of agents `A` and of coins (static, >= 1; 2 in JaxMARL).
      grid_size: side `S` of the torus (static, >= 1; 3 in JaxMARL).
      egocentric: egocentric observations (static).

    Raises:
      ValueError: impossible sizes, at construction (so at `make` time).
    """

    num_actions: int = 5

    def __init__(self, num_agents: int = 2, grid_size: int = 3, egocentric: bool = False):
        num_agents, grid_size = int(num_agents), int(grid_size)
        if num_agents < 1:
            raise ValueError(f"CoinGameJaxMARL needs num_agents >= 1, got {num_agents}")
        if grid_size < 1:
            raise ValueError(f"CoinGameJaxMARL needs grid_size >= 1, got {grid_size}")
        self.num_agents = num_agents
        self.grid_size = grid_size
        self.egocentric = bool(egocentric)
        self._moves = jnp.asarray(JAXMARL_MOVES)

    def __repr__(self) -> str:
        return (
            f"CoinGameJaxMARL(num_agents={self.num_agents}, grid_size={self.grid_size}, "
            f"egocentric={self.egocentric})"
        )

    def default_params(self) -> CoinGameJaxMARLParams:
        return CoinGameJaxMARLParams()

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        """Rewards of either sign and any restart period give a valid game."""
        return {
            "inner_steps": (1, 10),
            "own_coin_reward": (-2.0, 2.0),
            "other_coin_reward": (-2.0, 2.0),
            "owner_penalty": (-4.0, 0.0),
            "shared_rewards": (0, 1),
        }

    def validate_params(self, params) -> None:
        """Raise `ValueError` naming the field if `params` holds impossible values (host-side)."""
        check_param(params, "max_steps", lambda v: v >= 1, "must be >= 1")
        check_param(params, "inner_steps", lambda v: v >= 1, "must be >= 1")

    # ------------------------------------------------------------------ dynamics

    def sample_draws(self, key: PRNGKey) -> CoinDraws:
        """The random part of one step: `3 * A` independent uniform cells (one draw of bits)."""
        S, A = self.grid_size, self.num_agents
        # Raw bits modulo S*S: half the random bits of `randint` (which draws twice to be exactly
        # unbiased); a cell's probability is off by at most S*S / 2**32 relative (2e-9 on 3x3).
        bits = jax.random.bits(key, (3 * A,), jnp.uint32)
        cells = (bits % jnp.uint32(S * S)).astype(jnp.int32)  # [3A]
        pos = jnp.stack([cells // S, cells % S], axis=-1)  # [3A, 2]
        return CoinDraws(
            respawn_pos=pos[:A], restart_agent_pos=pos[A : 2 * A], restart_coin_pos=pos[2 * A :]
        )

    def reset(
        self, key: PRNGKey, params: CoinGameJaxMARLParams
    ) -> tuple[CoinGameJaxMARLState, TimeStep]:
        draws = self.sample_draws(key)
        state = CoinGameJaxMARLState(
            agent_pos=draws.restart_agent_pos, coin_pos=draws.restart_coin_pos, t=jnp.int32(0)
        )
        zeros_b = jnp.zeros((self.num_agents,), jnp.bool_)
        reward = jnp.zeros((self.num_agents,), jnp.float32)
        return state, self._timestep(state, params, reward, zeros_b, zeros_b, jnp.array(False))

    def step(
        self,
        key: PRNGKey,
        state: CoinGameJaxMARLState,
        actions: Array,
        params: CoinGameJaxMARLParams,
    ) -> tuple[CoinGameJaxMARLState, TimeStep]:
        return self.transition(state, actions, self.sample_draws(key), params)

    def transition(
        self,
        state: CoinGameJaxMARLState,
        actions: Array,
        draws: CoinDraws,
        params: CoinGameJaxMARLParams,
    ) -> tuple[CoinGameJaxMARLState, TimeStep]:
        """`step` given its random draws: the deterministic part of the dynamics.

        Args:
          state: the current state.
          actions: `[A]` int joint action.
          draws: the step's random cells (`sample_draws`); a coin's respawn cell is used only if
            the coin is picked up, the restart cells only on a restart step.
          params: the env params.

        Returns:
          `(next_state, timestep)`, as `step`.
        """
        S, A = self.grid_size, self.num_agents
        actions = jnp.clip(jnp.asarray(actions).astype(jnp.int32).reshape(A), 0, 4)
        agent_pos = (state.agent_pos + self._moves[actions]) % S  # [A, 2]
        # picked[i, j]: agent i stands on coin j after the move.
        picked = jnp.all(agent_pos[:, None, :] == state.coin_pos[None, :, :], axis=-1)  # [A, A]
        own = jnp.eye(A, dtype=jnp.bool_)  # [A, A]
        own_picked = jnp.any(picked & own, axis=1)  # [A]
        other_picked = jnp.sum(picked & ~own, axis=1).astype(jnp.float32)  # [A] coins of others
        lost = jnp.sum(picked & ~own, axis=0).astype(jnp.float32)  # [A] own coin taken by others
        reward = (
            params.own_coin_reward * own_picked.astype(jnp.float32)
            + params.other_coin_reward * other_picked
            + params.owner_penalty * lost
        )
        reward = jnp.where(params.shared_rewards, jnp.sum(reward), reward)
        coin_pos = jnp.where(jnp.any(picked, axis=0)[:, None], draws.respawn_pos, state.coin_pos)

        t = state.t + 1
        restart = t % jnp.maximum(params.inner_steps, 1) == 0
        next_state = CoinGameJaxMARLState(
            agent_pos=jnp.where(restart, draws.restart_agent_pos, agent_pos),
            coin_pos=jnp.where(restart, draws.restart_coin_pos, coin_pos),
            t=t,
        )
        reward = jnp.where(restart, 0.0, reward).astype(jnp.float32)
        cooperated = own_picked & ~restart
        defected = (other_picked > 0) & ~restart
        return next_state, self._timestep(next_state, params, reward, cooperated, defected, restart)

    # ------------------------------------------------------------------ observations

    def _timestep(
        self,
        state: CoinGameJaxMARLState,
        params: CoinGameJaxMARLParams,
        reward: Array,
        cooperated: Array,
        defected: Array,
        restart: Array,
    ) -> TimeStep:
        S, A = self.grid_size, self.num_agents
        agent_cells = state.agent_pos[:, 0] * S + state.agent_pos[:, 1]  # [A]
        coin_cells = state.coin_pos[:, 0] * S + state.coin_pos[:, 1]  # [A]
        agents_abs = jax.nn.one_hot(agent_cells, S * S, dtype=jnp.float32)  # [A, SS]
        coins_abs = jax.nn.one_hot(coin_cells, S * S, dtype=jnp.float32)  # [A, SS]
        if self.egocentric:
            # Shift the torus so that agent i sits at the centre cell.
            offset = S // 2 - state.agent_pos  # [A, 2]
            rel_a = (state.agent_pos[None, :, :] + offset[:, None, :]) % S  # [A, A, 2] j seen by i
            rel_c = (state.coin_pos[None, :, :] + offset[:, None, :]) % S  # [A, A, 2]
            agents = jax.nn.one_hot(rel_a[..., 0] * S + rel_a[..., 1], S * S)  # [A, A, SS]
            coins = jax.nn.one_hot(rel_c[..., 0] * S + rel_c[..., 1], S * S)  # [A, A, SS]
            diag = jnp.arange(A)
            self_1h, own_coin = agents[diag, diag], coins[diag, diag]  # [A, SS]
            all_agents, all_coins = agents.sum(axis=1), coins.sum(axis=1)  # [A, SS]
        else:
            self_1h, own_coin = agents_abs, coins_abs  # [A, SS]
            all_agents = agents_abs.sum(axis=0, keepdims=True)  # [1, SS]
            all_coins = coins_abs.sum(axis=0, keepdims=True)  # [1, SS]
        obs = jnp.stack(
            [
                self_1h,
                jnp.minimum(all_agents - self_1h, 1.0),  # other agents
                own_coin,
                jnp.minimum(all_coins - own_coin, 1.0),  # other agents' coins
            ],
            axis=-1,
        )
        # uint8 (0/1): a quarter of float32's memory traffic; agents cast observations to float.
        obs = obs.reshape(A, S, S, 4).astype(jnp.uint8)

        inner = jnp.maximum(params.inner_steps, 1)
        frac_inner = (state.t % inner) / inner
        frac = jnp.minimum(state.t / jnp.maximum(params.max_steps, 1), 1.0)
        global_state = jnp.concatenate(
            [agents_abs.reshape(-1), coins_abs.reshape(-1), jnp.stack([frac_inner, frac])]
        ).astype(jnp.float32)
        return TimeStep(
            obs=obs,
            reward=reward,
            terminated=jnp.array(False),
            truncated=state.t >= params.max_steps,
            action_mask=jnp.ones((A, self.num_actions), jnp.bool_),
            global_state=global_state,
            extras={
                "cooperated": cooperated,
                "defected": defected,
                "inner_episode_done": jnp.asarray(restart, jnp.bool_),
            },
        )

    def observation_space(self, params: CoinGameJaxMARLParams) -> spaces.Box:
        return spaces.Box(0, 1, (self.grid_size, self.grid_size, 4), jnp.uint8)

    def action_space(self, params: CoinGameJaxMARLParams) -> spaces.Discrete:
        return spaces.Discrete(self.num_actions)

    def global_state_space(self, params: CoinGameJaxMARLParams) -> spaces.Box:
        S, A = self.grid_size, self.num_agents
        return spaces.Box(0.0, 1.0, (2 * A * S * S + 2,), jnp.float32)
