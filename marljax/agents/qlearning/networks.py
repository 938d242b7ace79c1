"""The networks of the value-based learner: the per-agent Q-network, the mixer, and how they are
applied over agents, time and the next observation (`QNetworks`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from marljax.agents import common
from marljax.agents.qlearning.config import QConfig
from marljax.core import spaces
from marljax.core.types import Environment, EnvParams
from marljax.core.wrappers import any_across_vmap
from marljax.nn.mixers import QMixer, vdn_mix
from marljax.nn.networks import QNetwork  # noqa: F401  (also importable from here)

Array = jax.Array


def next_q(
    next_step_q: Callable[[Any, Array, Array], Array],
    params: Any,
    q: Array,
    hidden: Array,
    xs_next: Array,
    truncated: Array,
) -> Array:
    """Q of the observation after each step of a sequence, read from the unroll where it can be.

    `next_step_q(params, hidden, xs_next)` evaluates the network one step from the state after
    each step (`hidden [L, B, ...]`) on the observation after it (`xs_next [L, B, ...]`). Inside
    a sequence that observation is step `t + 1`'s input unless an episode ended at `t`, so the
    unroll's own `q [L, B, ...]` already holds it at `t + 1`; where the episode was terminated
    the value is multiplied by a zero discount anyway. Only the last step, and steps cut by a
    time limit (`truncated [L, B]`), need the final observation's Q. A batch with no truncation
    before its last step (e.g. one episode per sequence) evaluates the last step alone, 1/L of
    the general branch's work; the general branch runs only for batches that need it (a real
    branch under `vmap` too, see `any_across_vmap`). No gradient flows through the result.

    Returns:
      `[L, B, ...]`: equal to `next_step_q(params, hidden, xs_next)` wherever an episode was not
      terminated (everywhere when the batch takes the general branch).
    """
    params, q, hidden = jax.lax.stop_gradient((params, q, hidden))

    def general(_):
        return next_step_q(params, hidden, xs_next)

    def common_case(_):
        last = next_step_q(params, hidden[-1:], xs_next[-1:])
        return jnp.concatenate([q[1:], last], axis=0)

    mid_cut = any_across_vmap(jnp.any(truncated[:-1]))
    return jax.lax.cond(mid_cut, general, common_case, None)


@dataclasses.dataclass(frozen=True, eq=False)  # holds arrays: hashed by identity
class QNetworks:
    """The agent Q-network and the mixer of a learner, applied the way the learner needs them.

    Built by `make_q_networks`; static (closed over by the agent's pure functions).

    Attributes:
      config: the learner's `QConfig`.
      net: the per-agent `QNetwork`.
      mixer: the `QMixer` (used when `config.mixer == "qmix"`).
      num_agents: `A`.
      num_actions: `N`.
      carry_size: `H`, the GRU width (1 when feed-forward).
      in_dim: the agent network's input width (observation, plus the one-hot id in `shared_id`).
      obs_space: the per-agent observation space.
      state_space: the global-state space.
    """

    config: QConfig
    net: QNetwork
    mixer: QMixer
    num_agents: int
    num_actions: int
    carry_size: int
    in_dim: int
    obs_space: Any
    state_space: Any

    @property
    def independent(self) -> bool:
        """Agent parameters have a leading axis (`[A, ...]`, or `[G, ...]` when grouped)."""
        return self.config.parameter_mode in ("independent", "grouped")

    def per_agent_params(self, params: Any) -> Any:
        """Agent parameters as applied: `[G, ...]` gathered to `[A, ...]` when grouped."""
        if self.config.parameter_mode != "grouped":
            return params
        groups = common.agent_groups(self.num_agents, self.config.num_groups)
        return common.group_params(params, groups)

    def inputs(self, obs: Array) -> Array:
        """`[..., A, *obs_shape]` -> `[..., A, D]` agent-network inputs."""
        add_id = self.config.parameter_mode == "shared_id"
        return common.agent_inputs(obs, len(self.obs_space.shape), self.num_agents, add_id)

    def flat_state(self, gs: Array) -> Array:
        """`[..., *state_shape]` -> `[..., S]` float32."""
        return common.agent_inputs(gs, len(self.state_space.shape), self.num_agents, False)

    def apply_agents(self, params: Any, carry: Array, xs: Array, resets: Array):
        """`xs [T, B, A, D]` -> `(carry [B, A, H], (q [T, B, A, N], hidden [T, B, A, H']))`."""
        params = self.per_agent_params(params)
        return common.apply_over_agents(self.net.apply, params, carry, xs, resets, self.independent)

    def next_step_q(self, params: Any, hidden: Array, xs_next: Array) -> Array:
        """Q of the observation after each step, read from the state after that step.

        `hidden [T, B, A, H]` (GRU state after step t), `xs_next [T, B, A, D]` -> `[T, B, A, N]`.
        At non-final steps this equals the next step's Q in the same unroll; at episode ends it
        is the Q of the final observation (for bootstrapping at truncation).
        """
        T, B = xs_next.shape[:2]
        A = self.num_agents
        if self.config.recurrent:
            carry = hidden.reshape(T * B, A, -1)
        else:
            carry = jnp.zeros((T * B, A, 1))
        _, (q, _) = self.apply_agents(
            params, carry, xs_next.reshape(1, T * B, A, -1), jnp.zeros((1, T * B), bool)
        )
        return q.reshape(T, B, A, self.num_actions)

    def mix(self, mixer_params: Any, q_a: Array, gs: Array) -> Array:
        """`Q_tot [...]` of the agents' values `q_a [..., A]` in global states `gs [..., *S]`."""
        if self.config.mixer == "vdn":
            return vdn_mix(q_a)
        return self.mixer.apply(mixer_params, q_a, self.flat_state(gs))

    def init(self, key: Array) -> dict[str, Any]:
        """Fresh parameters `{"agent": ..., "mixer": ...}` (`mixer` is `{}` without QMIX)."""
        key_agent, key_mixer = jax.random.split(key)
        A, H = self.num_agents, self.carry_size

        def init_agent(k: Array) -> Any:
            zeros_in = jnp.zeros((1, 1, self.in_dim))
            return self.net.init(k, jnp.zeros((1, H)), zeros_in, jnp.zeros((1, 1), bool))

        grouped = self.config.parameter_mode == "grouped"
        sets = self.config.num_groups if grouped else A
        agent_params = common.init_per_agent(init_agent, key_agent, sets, self.independent)
        mixer_params = {}
        if self.config.mixer == "qmix":
            mixer_params = self.mixer.init(
                key_mixer, jnp.zeros((1, A)), jnp.zeros((1, self.state_space.flat_dim))
            )
        return {"agent": agent_params, "mixer": mixer_params}


def make_q_networks(
    config: QConfig, env: Environment, env_params: EnvParams | None = None
) -> QNetworks:
    """The `QNetworks` of a value-based learner for `env` (discrete actions).

    Raises:
      ValueError: continuous actions, QMIX on an env whose global state is empty.
    """
    env_params = env.default_params() if env_params is None else env_params
    A = env.num_agents
    act_space = env.action_space(env_params)
    if not isinstance(act_space, spaces.Discrete):
        raise ValueError(
            f"{config.mixer} learner needs discrete actions; {env.name} has {act_space}"
        )
    obs_space = env.observation_space(env_params)
    state_space = env.global_state_space(env_params)
    if config.mixer == "qmix" and state_space.flat_dim == 0:
        raise ValueError(
            f"mixer='qmix' conditions on the global state, but {env.name} has an empty global "
            "state; use mixer='vdn' or 'none', or give the env a global state"
        )
    if config.parameter_mode == "grouped":
        common.agent_groups(A, config.num_groups)  # raises unless 1 <= num_groups <= A
    H = config.gru_size if config.recurrent else 1
    N = act_space.n
    net = QNetwork(config.hidden_sizes, config.activation, N, config.recurrent, H)
    mixer = QMixer(
        config.mixer_embed_dim,
        config.hypernet_hidden,
        config.hypernet_layers,
        config.positive_map,
        config.mixer_init_scale,
    )
    in_dim = obs_space.flat_dim + (A if config.parameter_mode == "shared_id" else 0)
    return QNetworks(config, net, mixer, A, N, H, in_dim, obs_space, state_space)


__all__ = ["QNetwork", "QNetworks", "make_q_networks", "next_q"]
