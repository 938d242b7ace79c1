"""Cross-play between the trained policies of two run directories (`marljax eval --crossplay`).

Every seed of run A plays with every seed of run B in one compiled program: A controls some
agents, B the others, both greedy.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marljax.shell.policy import _check_finite, _check_same_spaces, _read, _setting_index
from marljax.training.train import eval_budget, make_evaluate


def crossplay_runs(
    run_a: str | os.PathLike,
    run_b: str | os.PathLike,
    roles_a: Sequence[int] = (0,),
    episodes: int = 16,
    setting_a: Any = None,
    setting_b: Any = None,
    key: jax.Array | None = None,
) -> dict[str, np.ndarray]:
    """Every seed of run A with every seed of run B: A controls the agents `roles_a`, B the
    others, both greedy (same env; any two algorithms).

    Returns:
      `{"return": [S_a, S_b] mean episode return (mean over agents), "per_agent": [S_a, S_b,
      A]}`.
    """
    from marljax.evaluation.crossplay import crossplay_matrix

    a, b = _read(run_a), _read(run_b)
    _check_same_spaces(a.built.env, a.built.env_params, b.built.env, b.built.env_params,
                       a.exp.env, b.exp.env)  # fmt: skip
    env, params = a.built.env, a.built.env_params
    mine = np.isin(np.arange(env.num_agents), list(roles_a))
    if mine.all() or not mine.any() or not set(roles_a) <= set(range(env.num_agents)):
        raise ValueError(
            f"roles_a={list(roles_a)} must name some but not all of the agents "
            f"0..{env.num_agents - 1}"
        )
    ga, gb = _setting_index(a, setting_a), _setting_index(b, setting_b)
    _check_finite(a, ga, list(range(a.exp.seeds)))
    _check_finite(b, gb, list(range(b.exp.seeds)))
    ha = jax.tree.map(lambda x: x[ga], a.built.hparams)
    hb = jax.tree.map(lambda x: x[gb], b.built.hparams)
    budget = eval_budget(a.built.trainer.config, params)
    joint = _joint_agent(a.built.agent, b.built.agent, jnp.asarray(mine))
    evaluate = make_evaluate(env, joint, episodes, budget)

    def play(state_a, state_b, k):
        out = evaluate((state_a, state_b), (ha, hb), params, k)
        return out["eval/episode_return_per_agent"]

    key = jax.random.PRNGKey(0) if key is None else key
    table = np.asarray(
        crossplay_matrix(
            play,
            jax.tree.map(lambda x: x[ga], a.states.agent_state),
            key,
            jax.tree.map(lambda x: x[gb], b.states.agent_state),
        )
    )
    return {"return": table.mean(-1), "per_agent": table}


def _joint_agent(agent_a: Any, agent_b: Any, mine: jax.Array) -> Any:
    """An agent acting with `agent_a` for the agents where `mine`, `agent_b` for the others
    (state, carry and hparams are pairs)."""

    def act(state, carry, obs, key, hparams, greedy=False):
        ka, kb = jax.random.split(key)
        kwargs = {"greedy": True} if greedy else {}
        act_a, carry_a, _ = agent_a.act(state[0], carry[0], obs, ka, hparams[0], **kwargs)
        act_b, carry_b, _ = agent_b.act(state[1], carry[1], obs, kb, hparams[1], **kwargs)
        m = mine.reshape((1, -1) + (1,) * (act_a.ndim - 2))
        return jnp.where(m, act_a, act_b), (carry_a, carry_b), ()

    return agent_a._replace(
        act=act, initial_carry=lambda n: (agent_a.initial_carry(n), agent_b.initial_carry(n))
    )


__all__ = ["crossplay_runs"]
