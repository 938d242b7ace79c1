"""Bayesian-network (DAG-correlated) joint policies over agents, with fixed or learned graphs.

- `marljax.agents.bn.graphs`: DAGs (fixed, user masks, the learned context-aware DAG),
  threshold annealing, joint sampling in topological order and joint log-probabilities; pure
  functions (every name is re-exported here, e.g. `bn.chain_graph`, `bn.sample_joint_actions`).
- `marljax.agents.bn.policy`: `BNJointPolicy`, the BN joint policy as a
  `marljax.agents.heads.JointPolicy`, which PPO composes into BN-MAPPO
  (`PPOConfig(graph=...)`).

Reference: D. Chen, K. Zhang, Y. Wang, X. Feng, Y. Wang, Z. Liu, "Context-Aware Bayesian Network
Actor-Critic Methods for Cooperative Multi-Agent Reinforcement Learning", ICML 2023.
"""

from marljax.agents.bn.graphs import *  # noqa: F403
from marljax.agents.bn.graphs import __all__ as _graph_names
from marljax.agents.bn.policy import BNJointPolicy, make_bn_policy

__all__ = [*_graph_names, "BNJointPolicy", "make_bn_policy"]
