"""The spatial (dynamic) Prisoner's Dilemma on an L x L torus, one learning agent per site.

Every step each of the `A = L * L` agents chooses to cooperate (action 0) or defect (action 1)
and plays one two-player Prisoner's Dilemma with each of its four von Neumann neighbours (up,
down, left, right; periodic boundaries), with the same action against all four. Its reward is
the sum of the four payoffs (the usual spatial-game convention, as in Nowak & May 1992 and the
RL lattices of Mangold et al. 2025). Payoffs are the dilemma-strength form of Wang et al. 2015:
`R = 1` (mutual cooperation), `P = 0` (mutual defection), `T = 1 + D_r` (temptation) and
`S = -D_g` (sucker's payoff); all four are traced params fields, so any 2x2 symmetric game can
be swept. Agents are partially observing: each sees only its own and its four neighbours'
previous actions.

This is the environment of Weng & Lee, "How Exploration Breaks Cooperation in Shared-Policy
Multi-Agent Reinforcement Learning", arXiv 2601.05509, 2026: DQN agents on an L x L lattice
with periodic boundaries (30x30 to 50x50 give nearly the same curves there), von Neumann
neighbourhoods, local (partial) observations, the temptation `D_r` as the payoff-harshness axis
(`D_r = 0.25` in their representation analysis). The exact reward normalisation and observation
vector of the paper were not available to us; the choices here (sum over neighbours, own +
neighbours' last actions) are the common ones and are documented as ours.

References: M. A. Nowak and R. M. May, "Evolutionary games and spatial chaos", Nature 359, 1992;
Z. Wang, S. Kokubo, M. Jusup and J. Tanimoto, "Universal scaling for the dilemma strength in
evolutionary games", Physics of Life Reviews 14, 2015.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core import spaces
from marljax.core.types import Array, Environment, EnvParams, PRNGKey, TimeStep
from marljax.envs.social.coin_game import check_param

#: action meanings (index = action)
ACTIONS = ("cooperate", "defect")
#: observation features of one agent, in order
OBS_FEATURES = ("self", "up", "down", "left", "right", "first_step")


@struct.dataclass
class SpatialPDParams(EnvParams):
    """Traced parameters of `SpatialPD`.

    Attributes:
      max_steps: time limit (truncation); large by default so `num_rounds` decides the length.
      num_rounds: the episode *terminates* after this many rounds.
      reward: `R`, each player's payoff for mutual cooperation.
      temptation: `T`, a defector's payoff against a cooperator (`1 + D_r`).
      sucker: `S`, a cooperator's payoff against a defector (`-D_g`).
      punishment: `P`, each player's payoff for mutual defection.
      init_cooperation: probability that an agent's "previous action" at reset is cooperation
        (the initial lattice is drawn from the reset key; in `[0, 1]`).
    """

    max_steps: int = 1000
    num_rounds: int = 20
    reward: float = 1.0
    temptation: float = 1.25
    sucker: float = -0.25
    punishment: float = 0.0
    init_cooperation: float = 0.5


@struct.dataclass
class SpatialPDState:
    """State of a spatial Prisoner's Dilemma episode."""

    cooperated: Array  # [A] bool previous round's choices (the random initial lattice at reset)
    t: Array  # [] int32 rounds played


def torus_neighbours(side: int) -> np.ndarray:
    """Von Neumann neighbours on a `side x side` torus, agents numbered row-major.

    Args:
      side: lattice side `L`.

    Returns:
      `[A, 4]` int32 (`A = L * L`): the indices of each agent's up, down, left and right
      neighbours, wrapping around the edges.
    """
    r, c = np.divmod(np.arange(side * side), side)
    up = ((r - 1) % side) * side + c
    down = ((r + 1) % side) * side + c
    left = r * side + (c - 1) % side
    right = r * side + (c + 1) % side
    return np.stack([up, down, left, right], axis=1).astype(np.int32)


def spatial_pd_payoff(cooperated: Array, neighbours: Array, params: SpatialPDParams) -> Array:
    """Each agent's summed Prisoner's Dilemma payoff against its neighbours.

    `r_i = sum_{j in N(i)} u(a_i, a_j)` with `u(C, C) = R`, `u(C, D) = S`, `u(D, C) = T`,
    `u(D, D) = P`.

    Args:
      cooperated: `[A]` bool, the agents' choices (True: cooperate).
      neighbours: `[A, K]` int, each agent's `K` neighbours.
      params: the payoffs `R, T, S, P`.

    Returns:
      `[A]` float32 rewards.
    """
    me = cooperated[:, None]
    other = cooperated[neighbours]  # [A, K]
    payoff = jnp.where(
        me,
        jnp.where(other, params.reward, params.sucker),
        jnp.where(other, params.temptation, params.punishment),
    )
    return payoff.sum(axis=-1).astype(jnp.float32)


class SpatialPD(Environment[SpatialPDState, SpatialPDParams]):
    """The spatial Prisoner's Dilemma: `L x L` agents on a torus, von Neumann neighbourhoods.

    Actions: `Discrete(2)`, 0 = cooperate, 1 = defect (values outside are clipped).

    Observation of agent `i` (`[6]` float32, `OBS_FEATURES`): 1.0 where the previous choice of
    itself and of its up, down, left and right neighbours was cooperation, then a first-step
    flag. At reset the "previous choices" are the random initial lattice (each cooperative with
    probability `params.init_cooperation`), so states differ between agents from the start. The
    global state (`[A + 1]`) is the whole lattice of previous choices (row-major) and the
    first-step flag. Reward: the sum of the four pairwise payoffs (`spatial_pd_payoff`).
    Terminates after `params.num_rounds` rounds; truncated at `params.max_steps`.

    `timestep.extras`: `"cooperated"` / `"defected"` `[A]` bool, this step's choices (both
    false at reset), for `marljax.evaluation.social`.

    Args:
      side: lattice side `L` (static, >= 3 so the four neighbours are distinct agents);
        `A = L * L` agents.

    Raises:
      ValueError: `side < 3`, at construction (so at `make` time).
    """

    def __init__(self, side: int = 6):
        if int(side) != side or side < 3:
            raise ValueError(
                f"SpatialPD needs an integer side >= 3 (A = side**2 agents), got {side}"
            )
        self.side = int(side)
        self.num_agents = self.side * self.side
        self.neighbours = torus_neighbours(self.side)  # [A, 4]

    def __repr__(self) -> str:
        return f"SpatialPD(side={self.side}, num_agents={self.num_agents})"

    def default_params(self) -> SpatialPDParams:
        return SpatialPDParams()

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        """Values accepted by `validate_params` (see `Environment.param_ranges`)."""
        return {
            "num_rounds": (1, 6),
            "reward": (0.5, 1.5),
            "temptation": (1.0, 2.0),
            "sucker": (-1.0, 0.0),
            "punishment": (-0.5, 0.5),
            "init_cooperation": (0.0, 1.0),
        }

    def validate_params(self, params: SpatialPDParams) -> None:
        """Raise `ValueError` naming the field if `params` holds impossible values (host-side)."""
        check_param(params, "max_steps", lambda v: v >= 1, "must be >= 1")
        check_param(params, "num_rounds", lambda v: v >= 1, "must be >= 1")
        for name in ("reward", "temptation", "sucker", "punishment"):
            check_param(params, name, np.isfinite, "must be finite")
        check_param(params, "init_cooperation", lambda v: (v >= 0) & (v <= 1), "must lie in [0, 1]")

    def reset(self, key: PRNGKey, params: SpatialPDParams) -> tuple[SpatialPDState, TimeStep]:
        lattice = jax.random.bernoulli(key, params.init_cooperation, (self.num_agents,))
        state = SpatialPDState(lattice, jnp.int32(0))
        none = jnp.zeros((self.num_agents,), jnp.bool_)
        reward = jnp.zeros((self.num_agents,), jnp.float32)
        return state, self._timestep(state, params, reward, none, none, jnp.array(False))

    def step(
        self, key: PRNGKey, state: SpatialPDState, actions: Array, params: SpatialPDParams
    ) -> tuple[SpatialPDState, TimeStep]:
        del key  # deterministic dynamics
        act = jnp.clip(jnp.asarray(actions).astype(jnp.int32).reshape(self.num_agents), 0, 1)
        coop = act == 0
        reward = spatial_pd_payoff(coop, self.neighbours, params)
        t = state.t + 1
        state = SpatialPDState(coop, t)
        return state, self._timestep(state, params, reward, coop, ~coop, t >= params.num_rounds)

    def _timestep(self, state, params, reward, cooperated, defected, terminated) -> TimeStep:
        A = self.num_agents
        lattice = state.cooperated.astype(jnp.float32)
        first = (state.t == 0).astype(jnp.float32)
        local = jnp.concatenate([lattice[:, None], lattice[self.neighbours]], axis=1)  # [A, 5]
        obs = jnp.concatenate([local, jnp.broadcast_to(first, (A, 1))], axis=1)
        truncated = jnp.logical_and(state.t >= params.max_steps, ~terminated)
        return TimeStep(
            obs=obs,
            reward=reward,
            terminated=jnp.asarray(terminated, jnp.bool_),
            truncated=truncated,
            action_mask=jnp.ones((A, 2), jnp.bool_),
            global_state=jnp.concatenate([lattice, first[None]]),
            extras={"cooperated": cooperated, "defected": defected},
        )

    def observation_space(self, params: SpatialPDParams) -> spaces.Box:
        return spaces.Box(0.0, 1.0, (len(OBS_FEATURES),), jnp.float32)

    def action_space(self, params: SpatialPDParams) -> spaces.Discrete:
        return spaces.Discrete(2)

    def global_state_space(self, params: SpatialPDParams) -> spaces.Box:
        return spaces.Box(0.0, 1.0, (self.num_agents + 1,), jnp.float32)
