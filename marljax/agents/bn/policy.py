"""The Bayesian-network joint policy as a `marljax.agents.heads.JointPolicy`.

Composed into an actor-critic agent (BN-MAPPO = PPO with this joint policy, Chen et al. 2023),
it turns the actor network's per-agent logits (the "base" logits, what each agent would play
alone) into a joint policy over a DAG (see `marljax.agents.bn.graphs`):

    pi(a | o) = prod_i softmax(base_i + [i has parents] * parent_net(x_i, a_pa(i)))[a_i]

- fixed graphs ("empty", "chain"/"line", "full" or a user `[A, A]` parent mask) or a learned,
  context-aware DAG (`GraphNet` on the global state), whose per-agent log-probability is added
  to the agent's conditional log-probability so that the score-function gradient trains it;
- the edge threshold anneals with the number of updates (`AnnealSchedule`);
- greedy acting: the mode DAG (`mode_dag`, learned graphs), then each agent's argmax given its
  parents' greedy actions, in topological order.

Parameters: `{"policy": actor network, "parents": parent network, "graph": GraphNet}` ("graph"
only for the learned DAG). With the empty graph every number equals the independent policy's.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marljax.agents import common
from marljax.agents.bn import graphs as bn
from marljax.nn.networks import MLP, SequenceNet

Array = jax.Array


@dataclasses.dataclass(frozen=True, eq=False)
class BNJointPolicy:
    """A Bayesian-network joint policy over `num_agents` agents with `num_actions` actions each.

    Build it with `make_bn_policy`. Attributes: the static structure it closes over.
    """

    num_agents: int
    num_actions: int
    input_dim: int
    state_dim: int
    independent: bool
    parent_net: Any
    graph_net: Any
    anneal: bn.AnnealSchedule
    fixed: bn.DAG | None  # None: the learned DAG

    @property
    def learned(self) -> bool:
        return self.fixed is None

    # ------------------------------------------------------------------------------ parameters
    def init(self, key: Array, actor_params: Any) -> dict:
        A, N = self.num_agents, self.num_actions

        def init_parent(k):
            x0 = jnp.zeros((1, 1, self.input_dim + A * N))
            return self.parent_net.init(k, jnp.zeros((1, 1)), x0, jnp.zeros((1, 1), bool))

        params = {
            "policy": actor_params,
            "parents": common.init_per_agent(
                init_parent, jax.random.fold_in(key, 1), A, self.independent
            ),
        }
        if self.learned:
            params["graph"] = self.graph_net.init(
                jax.random.fold_in(key, 2), jnp.zeros((self.state_dim,))
            )
        return params

    def net_params(self, actor_params: Any) -> Any:
        return actor_params["policy"]

    # ------------------------------------------------------------------------------ parent logits
    def _parent_logits_rows(self, params: Any, x: Array, inputs: Array, agent: Array) -> Array:
        """Extra logits of agent `agent[b]` of row `b`: `x [B, D]`, `inputs [B, A * N]`."""
        xs = jnp.concatenate([x, inputs], axis=-1)
        if self.independent:
            p = jax.tree.map(lambda q: q[agent], params)

            def one(pp, xx):
                return self.parent_net.apply(
                    pp, jnp.zeros((1, 1)), xx[None, None], jnp.zeros((1, 1), bool)
                )[1][0, 0]

            return jax.vmap(one)(p, xs)
        B = xs.shape[0]
        _, out = self.parent_net.apply(params, jnp.zeros((B, 1)), xs[None], jnp.zeros((1, B), bool))
        return out[0]

    def _parent_logits_all(self, params: Any, x: Array, inputs: Array, resets: Array) -> Array:
        """`x [T, B, A, D]`, `inputs [T, B, A, A * N]` -> `[T, B, A, N]`."""
        xs = jnp.concatenate([x, inputs], axis=-1)
        carry = jnp.zeros((xs.shape[1], self.num_agents, 1))
        return common.apply_over_agents(
            self.parent_net.apply, params, carry, xs, resets, self.independent
        )[1]

    # ------------------------------------------------------------------------------ graphs
    def _graph(self, actor_params: Any, global_state: Array, key: Array, threshold, greedy):
        """`(DAG [E, A, A] / [E, A], per-agent graph log-prob [E, A])`."""
        E, A = global_state.shape[0], self.num_agents
        if self.learned:
            context = global_state.reshape(E, -1).astype(jnp.float32)
            scores, edge_logits = self.graph_net.apply(actor_params["graph"], context)
            if greedy:
                dag = bn.mode_dag(scores, edge_logits, threshold)
            else:
                dag = bn.sample_dag(key, scores, edge_logits, threshold)
            return dag, bn.dag_log_prob(scores, edge_logits, dag, threshold)
        parents = bn.prune(self.fixed.parents, 1.0, threshold)
        dag = bn.DAG(
            jnp.broadcast_to(parents, (E, A, A)), jnp.broadcast_to(self.fixed.order, (E, A))
        )
        return dag, jnp.zeros((E, A))

    # ------------------------------------------------------------------------------ protocol
    def act(self, actor_params, inputs, outputs, observation, key, step, greedy):
        """Sample (or, `greedy`, take the mode of) the joint action: `outputs [E, A, N]`."""
        threshold = self.anneal(step)
        if self.learned:  # fixed graphs use `key` exactly as independent agents do
            key_graph, key = jax.random.split(key)
        else:
            key_graph = None
        dag, graph_lp = self._graph(
            actor_params, observation.global_state, key_graph, threshold, greedy
        )
        parent_p = actor_params["parents"]
        E = inputs.shape[0]
        actions = bn.sample_joint_actions(
            key,
            outputs,
            lambda pa, agent: self._parent_logits_rows(
                parent_p, inputs[jnp.arange(E), agent], pa, agent
            ),
            dag,
            observation.action_mask,
            greedy=greedy,
        )
        log_prob, _ = bn.joint_log_prob(
            outputs,
            lambda pa: self._parent_logits_all(
                parent_p, inputs[None], pa[None], jnp.zeros((1, E), bool)
            )[0],
            actions,
            dag.parents,
            observation.action_mask,
        )
        return actions, log_prob + graph_lp, {"parents": dag.parents, "order": dag.order}

    def extras(self, info: dict, observation: Any) -> dict:
        T, E = observation.reset.shape
        return {
            "parents": info["parents"],
            "order": info["order"],
            "context": observation.global_state.reshape(T, E, -1).astype(jnp.float32),
        }

    def log_prob_and_entropy(
        self, actor_params, inputs, outputs, actions, mask, extras, resets, step
    ):
        log_prob, dist = bn.joint_log_prob(
            outputs,
            lambda pa: self._parent_logits_all(actor_params["parents"], inputs, pa, resets),
            actions,
            extras["parents"],
            mask,
        )
        if self.learned:
            scores, edge_logits = self.graph_net.apply(actor_params["graph"], extras["context"])
            dag = bn.DAG(extras["parents"], extras["order"])
            log_prob = log_prob + bn.dag_log_prob(scores, edge_logits, dag, self.anneal(step))
        return log_prob, dist.entropy()

    def metrics(self, info: dict, step: Array) -> dict:
        return {
            "graph_density": jnp.mean(bn.edge_density(info["parents"])),
            "graph_threshold": self.anneal(step),
        }


def make_bn_policy(
    graph: Any,
    num_agents: int,
    num_actions: int,
    input_dim: int,
    state_dim: int,
    *,
    hidden_sizes: tuple[int, ...] = (64, 64),
    activation: str = "tanh",
    independent: bool = False,
    threshold_start: float = 0.0,
    threshold_end: float = 0.0,
    anneal_updates: int = 0,
    edge_init: float = 0.99,
    order_bias: float = 5.0,
) -> BNJointPolicy:
    """A Bayesian-network joint policy (`marljax.agents.heads.JointPolicy`).

    Args:
      graph: "empty", "chain" (alias "line"), "full", "learned" (a context-aware DAG on the
        global state) or a `[A, A]` parent mask (`mask[i][j] = 1`: `j` is a parent of `i`).
      num_agents: `A`.
      num_actions: `N` (discrete actions).
      input_dim: width `D` of the actor network's per-agent input (the parent network reads it
        together with the `A * N` one-hot parent actions).
      state_dim: width of the flattened global state (the learned graph's context).
      hidden_sizes, activation: the parent network's and graph network's MLP torsos.
      independent: parent networks have a leading agent axis (independent parameter mode).
      threshold_start, threshold_end, anneal_updates: the edge-threshold schedule.
      edge_init: initial probability of every allowed edge of the learned graph, in (0, 1).
      order_bias: initial gap between consecutive agents' order scores of the learned graph
        (`GraphNet.order_bias`, >= 0). The defaults (0.99, 5.0) start the learned graph near
        the full graph in index order, the dense start of Chen et al. 2023; see `PPOConfig`.

    Raises:
      ValueError: an unknown graph name, a malformed or cyclic mask, a mask of the wrong size.
    """
    A = num_agents
    if not 0.0 < edge_init < 1.0:
        raise ValueError(f"edge_init must be an edge probability in (0, 1), got {edge_init!r}")
    if not order_bias >= 0.0:
        raise ValueError(f"order_bias must be >= 0, got {order_bias!r}")
    if isinstance(graph, str) and graph == "learned":
        fixed = None
    elif isinstance(graph, str):
        fixed = bn.fixed_graph(graph, A)
    else:
        fixed = bn.graph_from_parents(graph)
        if fixed.parents.shape != (A, A):
            raise ValueError(
                f"PPOConfig.graph: the parent mask must be [{A}, {A}] for {A} agents, "
                f"got {tuple(fixed.parents.shape)}"
            )
    parent_net = SequenceNet(
        MLP(tuple(hidden_sizes), activation, num_actions, 0.01), recurrent=False, gru_size=1
    )
    return BNJointPolicy(
        num_agents=A,
        num_actions=num_actions,
        input_dim=input_dim,
        state_dim=state_dim,
        independent=independent,
        parent_net=parent_net,
        graph_net=bn.GraphNet(
            A,
            tuple(hidden_sizes),
            activation,
            edge_bias=float(np.log(edge_init / (1.0 - edge_init))),
            order_bias=float(order_bias),
        ),
        anneal=bn.AnnealSchedule(threshold_start, threshold_end, anneal_updates),
        fixed=fixed,
    )


__all__ = ["BNJointPolicy", "make_bn_policy"]
