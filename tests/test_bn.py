"""Bayesian-network joint policies: DAG sampling, joint sampling/log-probs, BN-MAPPO, tabular BN-PG.

Reference: D. Chen et al., "Context-Aware Bayesian Network Actor-Critic Methods for Cooperative
Multi-Agent Reinforcement Learning", ICML 2023.
"""

from __future__ import annotations

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import marljax
from marljax.agents import algo_spec, bn
from marljax.agents import bn_tabular as bt
from marljax.agents.base import Observation
from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
from marljax.training.train import TrainConfig, make_train

# ----------------------------------------------------------------------------- graphs


def test_fixed_graphs_are_dags_in_order():
    for A in (1, 2, 5):
        for name in ("empty", "chain", "line", "full"):
            g = bn.fixed_graph(name, A)
            assert g.parents.shape == (A, A) and g.order.shape == (A,)
            assert bool(bn.is_acyclic(g.parents)) and bool(bn.respects_order(g.parents, g.order))
    assert int(bn.num_edges(bn.chain_graph(5).parents)) == 4
    assert float(bn.edge_density(bn.full_graph(5).parents)) == 1.0
    assert float(bn.edge_density(bn.empty_graph(5).parents)) == 0.0
    # a user graph gets a valid topological order even when agent indices are not in order
    g = bn.graph_from_edges(3, [(2, 0), (0, 1)])
    assert g.order.tolist() == [2, 0, 1]
    assert not bool(bn.is_acyclic(jnp.array([[0, 1], [1, 0]], bool)))


def test_bad_graphs_and_schedules_fail_clearly():
    with pytest.raises(ValueError, match="cycle"):
        bn.graph_from_edges(3, [(0, 1), (1, 2), (2, 0)])
    with pytest.raises(ValueError, match="cycle"):
        bn.graph_from_parents(np.eye(2))  # a self-loop
    with pytest.raises(ValueError, match="out of range"):
        bn.graph_from_edges(3, [(0, 3)])
    with pytest.raises(ValueError, match="out of range"):
        bn.graph_from_edges(3, [(-1, 2)])
    with pytest.raises(ValueError, match=r"\[A, A\]"):
        bn.graph_from_parents(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="ends at 1.5 > 1"):
        bn.AnnealSchedule(0.0, 1.5, 10)
    with pytest.raises(ValueError, match="unknown fixed graph"):
        bn.fixed_graph("star", 3)
    # the same errors through the BN-MAPPO config, before anything compiles
    with pytest.raises(ValueError, match="graph_threshold_end"):
        PPOConfig(graph="learned", graph_threshold_end=1.5, graph_anneal_updates=5)
    with pytest.raises(ValueError, match="PPOConfig.graph: .*cycle"):
        PPOConfig(graph=((0, 1), (1, 0)))
    with pytest.raises(ValueError, match="graph must be one of"):
        PPOConfig(graph="star")
    with pytest.raises(ValueError, match="recurrent"):
        PPOConfig(graph="chain", recurrent=True)
    for bad in (0.0, 1.0):
        with pytest.raises(ValueError, match="graph_edge_init"):
            PPOConfig(graph="learned", graph_edge_init=bad)
    with pytest.raises(ValueError, match="graph_order_bias"):
        PPOConfig(graph="learned", graph_order_bias=-1.0)
    env, params = marljax.make("matrix/climbing-v0")
    with pytest.raises(ValueError, match=r"\[2, 2\]"):
        make_ppo(PPOConfig(graph=((0, 0, 0), (1, 0, 0), (0, 1, 0))), env, params)


def test_threshold_schedule():
    s = bn.AnnealSchedule(0.2, 1.0, 4)
    np.testing.assert_allclose([float(s(t)) for t in (0, 2, 4, 9)], [0.2, 0.6, 1.0, 1.0])
    assert float(bn.AnnealSchedule(0.3)(100)) == pytest.approx(0.3)


@functools.cache
def _dag_checker(num_agents: int):
    """One compiled check per agent count: sample DAGs for 64 contexts, test them."""
    net = bn.GraphNet(num_agents, (8,))

    @jax.jit
    def check(key, scale):
        k_ctx, k_net, k_sample, k_raw = jax.random.split(key, 4)
        context = scale * jax.random.normal(k_ctx, (64, 5))
        params = net.init(k_net, context)
        params = jax.tree.map(lambda p: p * 300.0, params)  # far from the near-uniform init
        scores, edge_logits = net.apply(params, context)
        # also raw, unconstrained logits (self-loop logits included)
        raw = scale * jax.random.normal(k_raw, (64, num_agents, num_agents))
        out = []
        for logits in (edge_logits, raw):
            dag = bn.sample_dag(k_sample, scores, logits)
            out += [
                jnp.all(bn.is_acyclic(dag.parents)),
                jnp.all(bn.respects_order(dag.parents, dag.order)),
                jnp.all(jnp.sort(dag.order, -1) == jnp.arange(num_agents)),
                bn.edge_density(dag.parents).mean() > 0.0,  # not trivially empty
            ]
        return jnp.stack(out)

    return check


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(num_agents=st.sampled_from((2, 3, 6)), seed=st.integers(0, 2**20), scale=st.floats(0.1, 8.0))
def test_every_sampled_graph_is_acyclic(num_agents, seed, scale):
    """Many keys x many contexts: every DAG is acyclic and its parents precede their children."""
    checks = _dag_checker(num_agents)(jax.random.PRNGKey(seed), scale)
    assert np.asarray(checks).all(), np.asarray(checks)


def test_graph_net_dense_start_is_near_the_full_graph():
    """`edge_bias` and `order_bias` set the initial DAG distribution: at logit(0.95) and a gap
    of 3 the mode is the full graph in index order and samples match the Plackett-Luce and
    Bernoulli probabilities; at 0 / 0 every order is equally likely."""
    A, S = 3, 4000
    context = jnp.ones((5,))
    keys = jax.random.split(jax.random.PRNGKey(0), S)
    sample = jax.jit(jax.vmap(bn.sample_dag, in_axes=(0, None, None)))  # one compile for both
    for order_bias, edge_p in ((3.0, 0.95), (0.0, 0.5)):
        net = bn.GraphNet(A, (8,), edge_bias=float(np.log(edge_p / (1 - edge_p))),
                          order_bias=order_bias)  # fmt: skip
        scores, logits = net.apply(net.init(jax.random.PRNGKey(1), context), context)
        off_diag = ~np.eye(A, dtype=bool)
        np.testing.assert_allclose(np.asarray(jax.nn.sigmoid(logits))[off_diag], edge_p, atol=0.02)
        dags = sample(keys, scores, logits)
        identity = np.mean(np.all(np.asarray(dags.order) == np.arange(A), axis=-1))
        expected = float(jnp.exp(jnp.sum(bn.plackett_luce_log_prob(scores, jnp.arange(A)))))
        assert abs(identity - expected) < 0.03, (identity, expected)
        if order_bias:
            assert expected > 0.85
            mode = bn.mode_dag(scores, logits)
            assert mode.order.tolist() == [0, 1, 2]
            np.testing.assert_array_equal(np.asarray(mode.parents), bn.full_graph(A).parents)
        else:
            assert abs(expected - 1 / 6) < 0.02


def test_full_annealing_prunes_every_edge():
    scores = jnp.zeros((32, 4))
    edge_logits = jnp.full((32, 4, 4), 30.0)  # probability 1.0 in float32
    key = jax.random.PRNGKey(0)
    assert float(bn.edge_density(bn.sample_dag(key, scores, edge_logits, 0.5).parents).min()) == 1
    assert int(bn.num_edges(bn.sample_dag(key, scores, edge_logits, 1.0).parents).max()) == 0
    assert int(bn.num_edges(bn.prune(bn.full_graph(4).parents, 1.0, 1.0))) == 0


def test_soft_sort_and_gumbel_sigmoid():
    s = jnp.array([0.3, 2.0, -1.0])
    p = bn.soft_sort(s, 1e-3)
    np.testing.assert_allclose(np.asarray(p), np.eye(3)[[1, 0, 2]], atol=1e-6)
    np.testing.assert_allclose(np.asarray(bn.soft_sort(s, 1.0).sum(-1)), 1.0, rtol=1e-6)
    logits = jnp.array([-1.0, 0.0, 2.0])
    y = jax.vmap(lambda k: bn.gumbel_sigmoid(k, logits))(jax.random.split(jax.random.key(0), 4000))
    assert set(np.unique(np.asarray(y)).tolist()) <= {0.0, 1.0}
    np.testing.assert_allclose(np.asarray(y.mean(0)), jax.nn.sigmoid(logits), atol=0.03)
    g = jax.grad(lambda lg: bn.gumbel_sigmoid(jax.random.key(1), lg, 0.5).sum())(logits)
    assert bool(jnp.all(g > 0))  # straight-through: differentiable in the logits


# ----------------------------------------------------------------------------- joint policy


def _linear_parent_fn(w):
    """Extra logits `inputs [..., A*N] @ w[agent] [A*N, N]`."""

    def rows(inputs, agent):
        return jnp.einsum("bk,bkn->bn", inputs, w[agent])

    def all_agents(inputs):
        return jnp.einsum("...ak,akn->...an", inputs, w)

    return rows, all_agents


def test_parents_are_sampled_before_children():
    """A child that copies its parent reproduces the root's action in every sample: the parent
    was always sampled first (an unsampled parent would read as action 0)."""
    A, N, B = 5, 4, 256
    k_perm, k_base, k_act = jax.random.split(jax.random.PRNGKey(3), 3)
    order = jax.vmap(lambda k: jax.random.permutation(k, A))(jax.random.split(k_perm, B))
    order = order.astype(jnp.int32)
    parents = jnp.zeros((B, A, A), bool)
    rows = jnp.arange(B)[:, None]
    parents = parents.at[rows, order[:, 1:], order[:, :-1]].set(True)  # chain in a random order
    w = jnp.broadcast_to(100.0 * jnp.tile(jnp.eye(N), (A, 1)), (A, A * N, N))  # copy parents
    fn_rows, _ = _linear_parent_fn(w)
    base = jax.random.normal(k_base, (B, A, N))
    actions = bn.sample_joint_actions(k_act, base, fn_rows, bn.DAG(parents, order))
    assert bool(jnp.all(actions == actions[:, :1]))
    assert len(np.unique(np.asarray(actions[:, 0]))) == N  # roots really vary


def test_joint_log_prob_matches_brute_force():
    """Exact enumeration on A = 3, N = 2: probabilities sum to 1 and match sampling frequencies;
    the learned-DAG log-probability sums to 1 over every (order, edges, joint action)."""
    A, N = 3, 2
    key = jax.random.PRNGKey(7)
    k_base, k_w, k_s, k_e, k_sample = jax.random.split(key, 5)
    base = jax.random.normal(k_base, (A, N))
    w = 2.0 * jax.random.normal(k_w, (A, A * N, N))
    fn_rows, fn_all = _linear_parent_fn(w)
    joint = bt.joint_actions(A, N)  # [8, A]
    scores = jax.random.normal(k_s, (A,))
    edge_logits = jax.random.normal(k_e, (A, A))
    full = bn.full_graph(A)

    def logp(actions, parents):
        lp, _ = bn.joint_log_prob(base, fn_all, actions, parents)
        return lp.sum(-1)

    @jax.jit
    def graph_and_actions(order, parents):
        """`exp(log p(DAG) + log p(a | DAG))` summed over all joint actions `a`."""
        glp = bn.dag_log_prob(scores, edge_logits, bn.DAG(parents, order)).sum()
        return jnp.exp(glp + jax.vmap(lambda a: logp(a, parents))(joint)).sum()

    probs = jax.jit(jax.vmap(lambda a: jnp.exp(logp(a, full.parents))))(joint)
    assert float(probs.sum()) == pytest.approx(1.0, abs=1e-5)
    # brute force: product of softmax conditionals computed by hand
    manual = []
    for a in np.asarray(joint):
        p = 1.0
        for i in range(A):
            onehot = np.zeros((A, N))
            onehot[np.arange(i), a[:i]] = 1.0  # parents of i in the full graph: 0..i-1
            logits = np.asarray(base[i]) + (onehot.reshape(-1) @ np.asarray(w[i]) if i else 0.0)
            e = np.exp(logits - logits.max())
            p *= e[a[i]] / e.sum()
        manual.append(p)
    np.testing.assert_allclose(np.asarray(probs), manual, rtol=1e-5)
    # sampling frequencies
    B = 20000
    dag = bn.DAG(jnp.broadcast_to(full.parents, (B, A, A)), jnp.broadcast_to(full.order, (B, A)))
    samples = jax.jit(bn.sample_joint_actions, static_argnums=2)(
        k_sample, jnp.broadcast_to(base, (B, A, N)), fn_rows, dag
    )
    freq = np.bincount(np.asarray(samples) @ (N ** np.arange(A - 1, -1, -1)), minlength=N**A) / B
    np.testing.assert_allclose(freq, manual, atol=0.015)

    # learned DAG: sum over all orders, all order-consistent edge sets and all joint actions
    total = 0.0
    for order in itertools.permutations(range(A)):
        order = jnp.array(order, jnp.int32)
        allowed = np.argwhere(np.asarray(bn.order_mask(order)))
        for bits in itertools.product((0, 1), repeat=len(allowed)):
            parents = np.zeros((A, A), bool)
            for (i, j), b in zip(allowed, bits, strict=True):
                parents[i, j] = bool(b)
            total += float(graph_and_actions(order, jnp.asarray(parents)))
    assert total == pytest.approx(1.0, abs=1e-4)


# ----------------------------------------------------------------------------- BN-MAPPO

TINY = TrainConfig(num_envs=4, rollout_len=2, total_env_steps=4 * 2 * 3)
TINY_AGENT = {"hidden_sizes": (8,), "num_epochs": 2, "num_minibatches": 2}


@pytest.fixture(scope="module")
def climbing():
    return marljax.make("matrix/climbing-v0")


def test_empty_graph_bn_mappo_equals_mappo(climbing):
    """Same seed, same numbers: metrics and MAPPO's parameters are bit-identical."""
    env, params = climbing
    out = {}
    for graph in ("none", "empty"):
        agent = make_ppo(PPOConfig(graph=graph, **TINY_AGENT), env, params)
        out[graph] = jax.jit(make_train(TINY, env, agent, params).train)(
            jax.random.PRNGKey(0), PPOHParams(lr=3e-3)
        )
    (s0, m0), (s1, m1) = out["none"], out["empty"]
    for k in m0:
        np.testing.assert_array_equal(np.asarray(m0[k]), np.asarray(m1[k]), err_msg=k)
    assert float(np.asarray(m1["graph_density"]).max()) == 0.0
    a0 = jax.tree.leaves(s0.agent_state.actor_params)
    a1 = jax.tree.leaves(s1.agent_state.actor_params["policy"])
    for x, y in zip(a0, a1, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    for x, y in zip(
        jax.tree.leaves(s0.agent_state.critic_params),
        jax.tree.leaves(s1.agent_state.critic_params),
        strict=True,
    ):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    assert float(np.abs(np.asarray(m0["policy_loss"])).max()) > 0.0  # it did train


def test_learned_graph_agent_anneals_to_independent(climbing):
    """The learned graph samples edges early; after full annealing every graph is empty, and the
    joint log-probability is finite and includes the graph's share."""
    env, params = climbing
    config = PPOConfig(
        graph="learned", graph_threshold_end=1.0, graph_anneal_updates=4, **TINY_AGENT
    )
    agent = make_ppo(config, env, params)
    hp = PPOHParams()
    state = jax.jit(agent.init)(jax.random.PRNGKey(0), hp)
    assert set(state.actor_params) == {"policy", "parents", "graph"}
    E = 64
    _, ts = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(
        jax.random.split(jax.random.PRNGKey(1), E), params
    )
    obs = Observation(ts.obs, ts.action_mask, ts.global_state, jnp.ones((E,), bool))
    act = jax.jit(agent.act)
    density = {}
    for step in (0, 4):
        s = state.replace(num_updates=jnp.int32(step))
        actions, _, info = act(s, agent.initial_carry(E), obs, jax.random.PRNGKey(2), hp)
        assert actions.shape == (E, 2)
        assert bool(jnp.all(jnp.isfinite(info["log_prob"])))
        assert bool(jnp.all(bn.respects_order(info["parents"], info["order"])))
        density[step] = float(bn.edge_density(info["parents"]).mean())
    assert density[0] > 0.9  # the default dense start: edges at probability 0.99
    assert density[4] == 0.0


def test_bn_mappo_is_registered():
    spec = algo_spec("bn_mappo")
    config = spec.config_cls(**spec.config_defaults)
    assert config.uses_graph and config.graph == "learned" and config.critic_input == "global"
    assert not PPOConfig().uses_graph


# ----------------------------------------------------------------------------- tabular


def test_tabular_payoff_and_nash_gap():
    A, N = 3, 3
    payoff_fn, gap_fn = jax.jit(bt.expected_payoff), jax.jit(bt.nash_gap)
    joint = bt.joint_actions(A, N)
    payoff = bt.coordination_game(A, N, 0.6)
    assert float(payoff.max()) == 1.0
    assert float(payoff[0]) == 1.0  # (0, 0, 0)
    assert float(payoff[-1]) == pytest.approx(0.6)  # everybody safe
    parents = bn.chain_graph(A).parents
    theta = jax.random.normal(jax.random.PRNGKey(0), (A, N**A, N))
    j = float(payoff_fn(theta, parents, payoff, joint))
    # brute force with the policy table
    table = bt.exact_policy_table(theta, parents, joint)
    assert table.sum() == pytest.approx(1.0, abs=1e-5)
    assert j == pytest.approx(float(table @ np.asarray(payoff)), rel=1e-5)
    assert float(gap_fn(theta, parents, payoff, joint)) > 0.05  # random: not an equilibrium
    # deterministic "everybody plays 0" and "everybody safe": equilibria (gap ~ 0)
    for action, value in ((0, 1.0), (N - 1, 0.6)):
        det = jnp.where(jnp.arange(N) == action, 40.0, -40.0) * jnp.ones((A, N**A, N))
        assert float(payoff_fn(det, parents, payoff, joint)) == pytest.approx(value)
        assert abs(float(gap_fn(det, parents, payoff, joint))) < 1e-4


def test_tabular_policy_gradient_chain_coordinates():
    """Exact PG on the 2-agent game: with the chain graph every seed reaches an optimum."""
    payoff = bt.coordination_game(2, 3)
    res = bt.train_tabular(
        jax.random.PRNGKey(0), bn.chain_graph(2), payoff, 3, num_seeds=16, num_steps=300, lr=2.0
    )
    assert res.payoff.shape == (16,)
    assert float(res.payoff.min()) > 0.95
    assert float(res.price_of_anarchy.max()) < 1.06
    assert float(res.nash_gap.max()) < 0.02
    with pytest.raises(ValueError, match="payoff must be"):
        bt.train_tabular(jax.random.PRNGKey(0), bn.chain_graph(3), payoff, 3)


def test_greedy_acting_follows_the_topological_order():
    # tabular: agent 1's table row is indexed by its parent's (agent 0's) greedy action
    N = 3
    theta = jnp.zeros((2, N**2, N)).at[0, :, 1].set(5.0)
    theta = theta.at[1, :, 0].set(1.0).at[1, 1, 2].set(5.0)  # row 1 = parent played 1
    np.testing.assert_array_equal(bt.greedy_joint_action(theta, bn.chain_graph(2)), [1, 2])
    np.testing.assert_array_equal(bt.greedy_joint_action(theta, bn.empty_graph(2)), [1, 0])
    # the joint sampler's greedy mode: argmax of each conditional, parents first
    base = jnp.array([[[0.0, 2.0], [1.0, 0.0]]])  # [B=1, A=2, N=2]

    def extra(inputs, agent):  # agent 1 copies its parent's action strongly
        return 10.0 * inputs[:, :2]

    dag = bn.DAG(bn.chain_graph(2).parents[None], bn.chain_graph(2).order[None])
    a = bn.sample_joint_actions(None, base, extra, dag, greedy=True)
    np.testing.assert_array_equal(a, [[1, 1]])
    # the mode DAG is acyclic and keeps only likely edges
    scores = jnp.array([[0.0, 2.0, 1.0]])
    logits = jnp.full((1, 3, 3), 3.0)
    mode = bn.mode_dag(scores, logits)
    np.testing.assert_array_equal(mode.order, [[1, 2, 0]])
    assert bool(bn.is_acyclic(mode.parents)[0]) and int(bn.num_edges(mode.parents)[0]) == 3
    assert int(bn.num_edges(bn.mode_dag(scores, -logits).parents)[0]) == 0
