"""Repeated RPS against EVERY bot of a RoShamBo population at once: one learner slot per bot.

`RPSLeague` is the training view of `rps_bots.RPSPopulation`. Where the population env plays one
bot drawn per episode (so under `vmap` over envs, its `lax.switch` on the per-env bot becomes a
select and every env step runs all `P` bots' code to move ONE learner), the league plays `P`
matches side by side in one env: learner slot `i` plays bot `i`, and each bot's code runs once per
step on its own slot (`roshambo.play.step_each`). One env step is `P` learner steps for the cost
of one population env step.

Each slot sees exactly what the single learner of `RPSPopulation` sees (the inner game's row of
the learner: the one-hot previous joint move, own move first, and a first-round flag), so a
policy trained here with shared parameters and no agent id plays `RPSPopulation` (and
`marljax.evaluation.population`'s per-bot evaluation) unchanged.

Lanctot et al., "Population-based Evaluation in Repeated Rock-Paper-Scissors as a Benchmark for
Multiagent Reinforcement Learning", TMLR 2023 (arXiv:2303.03196).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core import spaces
from marljax.core.types import Array, Environment, PRNGKey, TimeStep
from marljax.core.wrappers import Wrapper
from marljax.envs.matrix import roshambo
from marljax.envs.matrix.matrix_game import MatrixGame, MatrixGameParams
from marljax.envs.matrix.payoffs import rock_paper_scissors
from marljax.envs.matrix.roshambo.base import num_random
from marljax.envs.matrix.roshambo.play import init_states, step_each
from marljax.envs.matrix.rps_bots import (
    DEFAULT_ROUNDS,
    NUM_ACTIONS,
    check_rounds,
    check_throws,
    init_population,
)


@struct.dataclass
class RPSLeagueState:
    """State of `RPSLeague` (`P` bots, matches of at most `L` throws)."""

    inner: Any  # the MatrixGame's state, every field with a leading [P] slot axis
    bots: tuple  # bot i's state, one entry per bot
    my: Array  # [P, L + 1] int32 bot i's moves (roshambo history layout)
    opp: Array  # [P, L + 1] int32 slot i's learner moves


class RPSLeague(Wrapper):
    """Repeated RPS in which learner slot `i` plays bot `i` of a population, all in one env.

    `num_agents = P` (the number of bots). `obs` `[P, 7]`, `reward` `[P]` and `action_mask`
    `[P, 3]` are, row by row, what `RPSPopulation`'s single learner gets against that bot;
    `global_state` `[P * 8]` is the inner games' global states, concatenated. Every match has the
    same length (`params.num_rounds`), so the episode ends for all slots at once. Extras:
    `"coplayer_actions"` `[P]` int32 (bot `i`'s move, -1 at reset) and `"bot_id"` `[P]` int32
    (`arange(P)`). Every slot draws its bot's randomness from its own key.

    Params: the inner `MatrixGameParams` (`num_rounds` <= `num_throws`, `payoffs`, ...).

    Args:
      env: a two-player, three-action `MatrixGame` (rock-paper-scissors).
      bots: names of the population's bots (`rps_bots.ALL_BOT_NAMES`; default all `BOT_NAMES`).
      num_throws: the bots' match length `L` (static; default `DEFAULT_ROUNDS` = 1000).
    """

    def __init__(
        self, env: Environment, bots: Sequence[str] | None = None, num_throws: int | None = None
    ):
        super().__init__(env)
        init_population(self, env, bots, num_throws)
        self.num_agents = self.num_bots
        self._num_random = num_random(self._bots)

    @property
    def name(self) -> str:
        return f"RPSLeague<{self._env.name}, {self.num_bots} bots>"

    @property
    def agent_types(self) -> Array:
        return jnp.zeros((self.num_bots,), jnp.int32)

    def validate_params(self, params: MatrixGameParams) -> None:
        check_rounds(params, self.num_throws)

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        return {"num_rounds": (1, 6)}

    def _slots(self, ts: TimeStep, bot_actions: Array) -> TimeStep:
        """The learner's row of each slot's inner timestep (`ts` has a leading `[P]` axis)."""
        return ts.replace(
            obs=ts.obs[:, 0],
            reward=ts.reward[:, 0],
            terminated=ts.terminated[0],
            truncated=ts.truncated[0],
            action_mask=ts.action_mask[:, 0],
            global_state=ts.global_state.reshape(-1),
            extras={
                **ts.extras,
                "coplayer_actions": bot_actions,
                "bot_id": jnp.arange(self.num_bots, dtype=jnp.int32),
            },
        )

    def reset(self, key: PRNGKey, params: MatrixGameParams):
        keys = jax.random.split(key, self.num_bots)
        inner, ts = jax.vmap(self._env.reset, in_axes=(0, None))(keys, params)
        h = jnp.tile(roshambo.empty_history(self.num_throws)[None], (self.num_bots, 1))
        state = RPSLeagueState(
            inner=inner, bots=init_states(self._bots, self.num_throws), my=h, opp=h
        )
        return state, self._slots(ts, jnp.full((self.num_bots,), -1, jnp.int32))

    def step(self, key: PRNGKey, state: RPSLeagueState, actions: Array, params):
        key_env, key_bot = jax.random.split(key)
        chex.assert_shape(actions, (self.num_bots,))
        learner = jnp.clip(jnp.asarray(actions, jnp.int32), 0, NUM_ACTIONS - 1)  # [P]
        rand = jax.vmap(roshambo.draw_random, in_axes=(0, None))(
            jax.random.split(key_bot, self.num_bots), self._num_random
        )  # [P, K]
        bot, states = step_each(self._bots, state.bots, state.my, state.opp, rand)
        joint = jnp.stack([learner, bot], axis=-1)  # [P, 2]
        keys = jax.random.split(key_env, self.num_bots)
        inner, ts = jax.vmap(self._env.step, in_axes=(0, 0, 0, None))(
            keys, state.inner, joint, params
        )
        new = RPSLeagueState(
            inner=inner,
            bots=states,
            my=jax.vmap(roshambo.record)(state.my, bot),
            opp=jax.vmap(roshambo.record)(state.opp, learner),
        )
        return new, self._slots(ts, bot)

    def observation_space(self, params) -> spaces.Box:
        return self._env.observation_space(params)

    def action_space(self, params) -> spaces.Discrete:
        return self._env.action_space(params)

    def global_state_space(self, params) -> spaces.Box:
        inner = self._env.global_state_space(params)
        return spaces.Box(0.0, 1.0, (self.num_bots * int(np.prod(inner.shape)),), jnp.float32)


def make_rps_league(bots: Sequence[str] | None = None, num_throws: int | None = None) -> RPSLeague:
    """A learner slot per bot of a RoShamBo population, in matches of 1000 throws by default.

    Args:
      bots: names of the population (`rps_bots.ALL_BOT_NAMES`; default all `BOT_NAMES`).
      num_throws: match length (static; default 1000, as in Lanctot et al. 2023); shorter
        `params.num_rounds` <= `num_throws` also work, but bots plan with `num_throws`.

    Returns:
      An `RPSLeague` around `MatrixGame(rock_paper_scissors())`.
    """
    n = check_throws(DEFAULT_ROUNDS if num_throws is None else num_throws)
    game = MatrixGame(rock_paper_scissors(), num_rounds=n, name="rock_paper_scissors")
    return RPSLeague(game, bots, n)


__all__ = ["RPSLeague", "RPSLeagueState", "make_rps_league"]
