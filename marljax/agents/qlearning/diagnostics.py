"""Diagnostics of a trained feed-forward value-based learner: per-agent and joint Q tables."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from marljax.agents import common
from marljax.agents.base import Observation
from marljax.agents.qlearning.config import QConfig, QState
from marljax.agents.qlearning.networks import QNetwork
from marljax.core.types import Environment, EnvParams
from marljax.nn.mixers import QMixer, vdn_mix

Array = jax.Array


def q_table(
    agent_config: QConfig,
    env: Environment,
    state: QState,
    observation: Observation,
    env_params: EnvParams | None = None,
) -> dict[str, np.ndarray]:
    """Per-agent Q values and the joint Q_tot table at one observation.

    Feed-forward agents only (a recurrent agent's values depend on its history; pass the carry
    through your own unroll instead).

    Args:
      agent_config: the `QConfig` the agent was built with.
      env: the environment.
      state: the trained `QState` (one run; no seed axis).
      observation: an `Observation` of ONE environment (leaves without the env axis, e.g. from
        `env.reset`).
      env_params: params the agent was built with.

    Returns:
      `{"q": [A, N] per-agent values, "q_tot": [N] * A joint table}` as numpy arrays (for IQL,
      `q_tot` is the sum of the agents' values, shown for comparison; for QTRAN it is the sum of
      the utilities the agents act on, not its joint network `Q_jt`).
    """
    if agent_config.recurrent:
        raise ValueError("q_table needs a feed-forward agent (recurrent=False)")
    env_params = env.default_params() if env_params is None else env_params
    A = env.num_agents
    N = env.action_space(env_params).n
    obs_rank = len(env.observation_space(env_params).shape)
    x = common.agent_inputs(
        observation.obs, obs_rank, A, agent_config.parameter_mode == "shared_id"
    )
    net = QNetwork(
        agent_config.hidden_sizes, agent_config.activation, N, False, agent_config.gru_size
    )
    params = state.params["agent"]
    if agent_config.parameter_mode == "grouped":
        params = common.group_params(params, common.agent_groups(A, agent_config.num_groups))
    independent = agent_config.parameter_mode in ("independent", "grouped")
    _, (q, _) = common.apply_over_agents(
        net.apply,
        params,
        jnp.zeros((1, A, 1)),
        x[None, None],
        jnp.zeros((1, 1), bool),
        independent,
    )
    q = q[0, 0]  # [A, N]
    joint = jnp.stack(jnp.meshgrid(*[jnp.arange(N)] * A, indexing="ij"), -1).reshape(-1, A)
    q_joint = q[jnp.arange(A), joint]  # [N^A, A]
    if agent_config.mixer == "qmix":
        mixer = QMixer(
            agent_config.mixer_embed_dim,
            agent_config.hypernet_hidden,
            agent_config.hypernet_layers,
            agent_config.positive_map,
            agent_config.mixer_init_scale,
        )
        gs = observation.global_state.reshape(-1).astype(jnp.float32)
        q_tot = mixer.apply(
            state.params["mixer"], q_joint, jnp.broadcast_to(gs, (len(joint), gs.size))
        )
    else:
        q_tot = vdn_mix(q_joint)
    return {"q": np.asarray(q), "q_tot": np.asarray(q_tot).reshape((N,) * A)}


def first_step_q_table(
    agent_config: QConfig,
    env: Environment,
    state: QState,
    env_params: EnvParams | None = None,
    key: Array | None = None,
) -> dict[str, np.ndarray]:
    """`q_table` at the first observation of an episode (e.g. a one-step matrix game)."""
    env_params = env.default_params() if env_params is None else env_params
    key = jax.random.PRNGKey(0) if key is None else key
    _, ts = env.reset(key, env_params)
    observation = Observation(ts.obs, ts.action_mask, ts.global_state, jnp.array(True))
    return q_table(agent_config, env, state, observation, env_params)


def format_q_table(table: dict[str, np.ndarray], decimals: int = 2) -> str:
    """A printable rendering of `q_table`'s output (2-agent joint tables as a grid)."""
    q, q_tot = table["q"], table["q_tot"]
    lines = ["per-agent Q values:"]
    for i, row in enumerate(q):
        lines.append(f"  agent {i}: " + "  ".join(f"{v:8.{decimals}f}" for v in row))
    if q_tot.ndim == 2:
        lines.append("Q_tot[a0, a1] (rows: agent 0's action, columns: agent 1's):")
        lines.append("        " + "".join(f"{j:>9d}" for j in range(q_tot.shape[1])))
        for i, row in enumerate(q_tot):
            lines.append(f"  {i:>4d}  " + "".join(f"{v:9.{decimals}f}" for v in row))
    else:
        lines.append(f"Q_tot over {q_tot.ndim} agents' joint actions:")
        for idx in np.ndindex(q_tot.shape):
            lines.append(f"  {idx}: {q_tot[idx]:.{decimals}f}")
    best = np.unravel_index(np.argmax(q_tot), q_tot.shape)
    lines.append(f"greedy joint action: {tuple(int(i) for i in best)}")
    return "\n".join(lines)


__all__ = ["first_step_q_table", "format_q_table", "q_table"]
