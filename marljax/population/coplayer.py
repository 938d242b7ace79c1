"""A two-player normal-form game seen by one learner whose co-player plays a traced mixed strategy.

PSRO's best-response step trains a policy against the other player's meta-mixture. In a
normal-form game a mixture of policies is again a mixed strategy over actions
(`sum_k sigma[k] pi^k`), so the opponent is a co-player that samples its action from a
distribution held in the env params, where it is traced: one compiled training program (any
registered agent through `marljax.training.train.make_train`) serves every PSRO iteration, and a batch of
opponents is one `vmap` over params.

The learner is agent 0 of the inner game. To train the column player, give the game with the
roles swapped (`swap_roles`), in which the column player is the row player.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
from flax import struct

from marljax.core.types import Array, PRNGKey, TimeStep
from marljax.core.wrappers import Wrapper
from marljax.envs.matrix.matrix_game import MatrixGame, MatrixGameParams


@struct.dataclass
class MixedCoPlayerParams(MatrixGameParams):
    """`MatrixGameParams` plus the co-player's mixed strategy.

    Attributes:
      coplayer_strategy: `[N]` the co-player's (agent 1's) action distribution.
    """

    coplayer_strategy: Array = struct.field(default_factory=lambda: jnp.full((2,), 0.5))


def swap_roles(payoffs: Array) -> Array:
    """The two-player game with the players' roles exchanged.

    `swapped[i, a, b] = payoffs[1 - i, b, a]`: the column player of `payoffs` is the row player
    (agent 0) of `swapped`.

    Args:
      payoffs: `[2, N, N]` payoff tensor.

    Returns:
      `[2, N, N]` payoff tensor.
    """
    return jnp.transpose(payoffs[::-1], (0, 2, 1))


class MixedCoPlayer(Wrapper):
    """One learner (agent 0) against a co-player (agent 1) that samples from a traced strategy.

    Every step the co-player draws its action from `params.coplayer_strategy` (independently
    per step); the learner's observation, reward and action mask are agent 0's (`[1, ...]`), the
    global state is the inner game's, and `extras["coplayer_actions"]` (`[1]` int32, -1 at reset)
    records the co-player's action.

    Args:
      env: a two-player `MatrixGame`.
    """

    def __init__(self, env: MatrixGame):
        if not isinstance(env, MatrixGame) or env.num_agents != 2:
            raise ValueError(f"MixedCoPlayer needs a two-player MatrixGame, got {env!r}")
        super().__init__(env)
        self.num_agents = 1

    @property
    def agent_types(self) -> Array:
        return self._env.agent_types[:1]

    def default_params(self) -> MixedCoPlayerParams:
        inner = self._env.default_params()
        n = self._env.num_actions
        return MixedCoPlayerParams(
            max_steps=inner.max_steps,
            payoffs=inner.payoffs,
            num_rounds=inner.num_rounds,
            coplayer_strategy=jnp.full((n,), 1.0 / n, jnp.float32),
        )

    def _slice(self, ts: TimeStep, coplayer_action: Array) -> TimeStep:
        return ts.replace(
            obs=ts.obs[:1],
            reward=ts.reward[:1],
            action_mask=ts.action_mask[:1],
            extras={**ts.extras, "coplayer_actions": coplayer_action},
        )

    def reset(self, key: PRNGKey, params: MixedCoPlayerParams):
        state, ts = self._env.reset(key, params)
        return state, self._slice(ts, jnp.full((1,), -1, jnp.int32))

    def step(self, key: PRNGKey, state, actions: Array, params: MixedCoPlayerParams):
        chex.assert_shape(actions, (1,))
        key_env, key_co = jax.random.split(key)
        co = jax.random.categorical(key_co, jnp.log(params.coplayer_strategy)).astype(jnp.int32)
        joint = jnp.stack([jnp.asarray(actions[0], jnp.int32), co])
        state, ts = self._env.step(key_env, state, joint, params)
        return state, self._slice(ts, co[None])
