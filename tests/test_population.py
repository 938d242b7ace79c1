"""Population training on games with exact answers: meta-solvers, PSRO, LOLA."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.core.config import ConfigError
from marljax.envs.matrix import payoffs as P
from marljax.envs.matrix import strategies
from marljax.population import advantage_alignment as aa
from marljax.population import lola, pool
from marljax.population import metasolvers as ms
from marljax.population.coplayer import MixedCoPlayer, swap_roles
from marljax.population.psro import PSROConfig, PSROHParams, make_psro
from marljax.testing import check_env
from marljax.training.train import TrainConfig, make_train

# A weighted RPS (skew-symmetric, value 0): A p = 0 gives the unique, non-uniform equilibrium
# p = (1/4, 1/2, 1/4) for both players.
WEIGHTED_RPS = [[0.0, -1.0, 2.0], [1.0, 0.0, -1.0], [-2.0, 1.0, 0.0]]
# Row payoffs [[2, -1], [-1, 1]]: both players mix (2/5, 3/5), value 1/5.
TWO_BY_TWO = [[2.0, -1.0], [-1.0, 1.0]]
HP = ms.MetaSolverHParams()


@pytest.fixture(scope="module")
def rps():
    return marljax.make("matrix/rps-v0")


@pytest.fixture(scope="module")
def psro_rps(rps):
    """NashConv curves on RPS over 4 seeds, for three meta-solvers, exact best responses."""
    env, _ = rps
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    curves = {}
    for solver in ("uniform", "last", "nash"):
        config = PSROConfig(population_size=24, meta_solver=solver, meta_iterations=500)
        run = jax.jit(jax.vmap(make_psro(config, env), in_axes=(0, None)))
        curves[solver] = run(keys, PSROHParams())
    return curves


# ----------------------------------------------------------------------------- meta-solvers


def test_nash_meta_solver_matches_hand_computed_equilibria():
    solve = jax.jit(ms.regret_matching, static_argnums=3)
    sigma = solve(P.zero_sum(WEIGHTED_RPS), None, HP, 2000)
    np.testing.assert_allclose(sigma, [[0.25, 0.5, 0.25]] * 2, atol=2e-3)
    sigma = solve(P.zero_sum(TWO_BY_TWO), None, HP, 2000)
    np.testing.assert_allclose(sigma, [[0.4, 0.6]] * 2, atol=2e-3)


@pytest.mark.parametrize("name", sorted(ms.META_SOLVERS))
def test_meta_solvers_respect_the_mask(name):
    mask = jnp.array([[True, True, False], [True, True, False]])
    iterations = 20 if name == "alpharank" else 200
    solve = jax.jit(ms.get_meta_solver(name), static_argnums=3)
    sigma = np.asarray(solve(P.zero_sum(WEIGHTED_RPS), mask, HP, iterations))
    assert sigma.shape == (2, 3)
    np.testing.assert_allclose(sigma.sum(-1), 1.0, atol=1e-5)
    assert (sigma >= 0).all() and (sigma[:, 2] == 0).all()


def test_alpharank_and_rae_pick_the_known_profiles():
    # alpha-rank: all mass on the dominant strategy (defect) of the Prisoner's Dilemma
    sigma = jax.jit(ms.alpharank, static_argnums=3)(P.prisoners_dilemma(), None, HP, 30)
    np.testing.assert_allclose(sigma, [[0.0, 1.0]] * 2, atol=1e-3)
    # Stag Hunt: regret matching from uniform stays at the mixed equilibrium (1/2, 1/2); the
    # risk-averse equilibrium selects the risk-dominant (hare, hare) (Slumbers et al. 2023)
    np.testing.assert_allclose(ms.regret_matching(P.stag_hunt(), None, HP, 500), 0.5, atol=1e-3)
    rae = jax.jit(ms.risk_averse_equilibrium, static_argnums=3)
    sigma = rae(P.stag_hunt(), None, HP, 300)
    assert (sigma[:, 1] > 0.95).all(), sigma
    # without risk aversion or trembling the RAE is a Nash equilibrium of the zero-sum game
    neutral = ms.MetaSolverHParams(risk_aversion=0.0, risk_epsilon=0.0)
    sigma = rae(P.zero_sum(WEIGHTED_RPS), None, neutral, 300)
    np.testing.assert_allclose(sigma, [[0.25, 0.5, 0.25]] * 2, atol=0.03)


def test_rae_is_a_risk_averse_best_response_to_itself_in_chicken():
    # chicken with a crash (both straight: -10); symmetric, so fictitious play from uniform
    # stays symmetric and finds the symmetric equilibrium p = P(straight)
    game = P.symmetric([[3.0, 1.0], [4.0, -10.0]])
    rae = jax.jit(ms.risk_averse_equilibrium, static_argnums=3)
    grid = jnp.linspace(0.0, 1.0, 2001)
    for lam, eps in [(0.0, 0.0), (1.0, 0.0), (0.1, 0.1)]:
        hp = ms.MetaSolverHParams(risk_aversion=lam, risk_epsilon=eps)
        sigma = np.asarray(rae(game, None, hp, 1000))
        p = sigma[0, 1]
        # no deviation on a fine grid earns more risk-averse utility against sigma
        x = jnp.stack([1.0 - grid, grid], -1)
        utility = jax.vmap(ms.risk_averse_utility, (None, 0, None, None, None))(
            game[0], x, jnp.asarray(sigma[1]), lam, eps
        )
        own = ms.risk_averse_utility(game[0], jnp.asarray(sigma[0]), sigma[1], lam, eps)
        assert float(utility.max() - own) < 2e-3, (lam, eps, p)
        if lam == 0.0:
            assert p == pytest.approx(1 / 12, abs=2e-3)  # the mixed Nash equilibrium
    assert p < 0.03  # risk aversion and trembling: far less "straight" than Nash's 1/12
    v = ms.project_to_simplex(jnp.array([0.5, 2.0, -1.0, 0.3]), jnp.array([1, 0, 1, 1], bool))
    np.testing.assert_allclose(v, [0.6, 0.0, 0.0, 0.4], atol=1e-6)


def test_fixation_probability_is_stable_and_exact():
    m, alpha = 50.0, 10.0
    d = jnp.array([-5.0, -1e-3, 0.0, 1e-3, 5.0])
    rho = np.asarray(ms.fixation_probability(d, alpha, m))
    x = alpha * np.array([-5.0, -1e-3, 1e-3, 5.0], np.float64)
    with np.errstate(over="ignore"):  # float64 reference: exp(500) is fine, 1/inf -> 0
        expected = (1 - np.exp(-x)) / (1 - np.exp(-m * x))
    np.testing.assert_allclose(rho[[0, 1, 3, 4]], expected, rtol=1e-4, atol=1e-30)
    assert rho[2] == pytest.approx(1 / m)
    assert np.isfinite(np.asarray(ms.fixation_probability(jnp.array([1e4, -1e4]), 1e3, m))).all()


# ----------------------------------------------------------------------------- PSRO


def test_fictitious_play_on_rps_converges_to_uniform(psro_rps):
    nash_conv = np.asarray(psro_rps["uniform"].nash_conv)  # [S, K]
    assert nash_conv[:, 0] == pytest.approx(2.0), nash_conv[:, 0]  # a pure strategy: max gain
    # fictitious play's average approaches uniform; iterated best response (self-play) cycles
    # (measured: 0.33-0.375 at K = 24; self-play stays at the maximum 2)
    assert nash_conv[:, -1].max() < 0.45, nash_conv[:, -1]
    assert (nash_conv[:, -1] < nash_conv[:, 5]).all()
    np.testing.assert_allclose(psro_rps["last"].nash_conv, 2.0, atol=1e-6)
    mixture = jnp.einsum(
        "sik,sikn->sin", psro_rps["uniform"].meta_strategy[:, -1], psro_rps["uniform"].policies
    )
    np.testing.assert_allclose(mixture, 1.0 / 3.0, atol=0.2)  # spirals in slowly (Shapley 1964)


def test_symmetric_fictitious_self_play_shares_one_population(rps):
    env, params = rps
    config = PSROConfig(population_size=16, meta_solver="uniform", symmetric=True)
    run = jax.jit(jax.vmap(make_psro(config, env, params), in_axes=(0, None)))
    out = run(jax.random.split(jax.random.PRNGKey(0), 2), PSROHParams())
    np.testing.assert_array_equal(out.policies[:, 0], out.policies[:, 1])
    nash_conv = np.asarray(out.nash_conv)
    assert (nash_conv[:, 0] == pytest.approx(2.0)) and nash_conv[:, -1].max() < 0.45, nash_conv


def test_psro_with_nash_solver_reaches_equilibrium(psro_rps):
    out = psro_rps["nash"]
    assert np.asarray(out.nash_conv)[:, -1].max() < 0.02
    # the empirical game is the true game between the members (exact evaluation)
    pol, meta = out.policies[0], out.meta_payoffs[0]
    expected = jnp.einsum("an,bm,inm->iab", pol[0], pol[1], P.rock_paper_scissors())
    np.testing.assert_allclose(meta, expected, atol=1e-6)
    # seeds start from different random pure strategies
    first = np.asarray(out.policies[:, :, 0].argmax(-1))
    assert len({tuple(f) for f in first}) > 1


def test_psro_policy_gradient_best_responses(rps):
    env, _ = rps
    config = PSROConfig(
        population_size=6,
        meta_solver="nash",
        best_response="pg",
        br_steps=30,
        br_batch=32,
        meta_iterations=300,
    )
    out = jax.jit(make_psro(config, env))(jax.random.PRNGKey(1), PSROHParams())
    nash_conv = np.asarray(out.nash_conv)
    assert nash_conv[0] > 1.9 and nash_conv[-1] < 0.3, nash_conv
    # the learned response to the initial pure strategy is (near-)deterministic: the uniform
    # start has been left (later responses face a near-uniform mixture and stay mixed)
    assert (np.asarray(out.policies[:, 1]).max(-1) > 0.9).all(), out.policies[:, 1]


def test_psro_with_a_registered_agent_as_best_response(rps):
    """IPPO trained by make_train inside the PSRO program (on MixedCoPlayer) finds the pure
    best responses to the initial pure strategies, then the rest of the cycle."""
    env, params = rps
    config = PSROConfig(
        population_size=4,
        meta_solver="nash",
        best_response="agent",
        meta_iterations=300,
        br_train=TrainConfig(num_envs=16, rollout_len=1, total_env_steps=512),
    )
    out = jax.jit(make_psro(config, env, params))(jax.random.PRNGKey(0), PSROHParams())
    policies = np.asarray(out.policies)
    first = policies[:, 0].argmax(-1)  # the initial pure strategies
    # member 1 of each player beats the other's initial strategy (RPS: a beats (a - 1) mod 3)
    assert policies[0, 1, (first[1] + 1) % 3] > 0.9, policies[0, 1]
    assert policies[1, 1, (first[0] + 1) % 3] > 0.9, policies[1, 1]
    assert float(out.nash_conv[0]) == pytest.approx(2.0) and float(out.nash_conv[-1]) < 1.5


def test_mixed_coplayer_meets_the_env_contract(rps):
    env, params = rps
    co = MixedCoPlayer(env)
    co_params = co.default_params().replace(coplayer_strategy=jnp.array([0.0, 1.0, 0.0]))
    check_env(co, co_params, num_steps=8, num_envs=2)
    _, ts = co.step(
        jax.random.PRNGKey(0),
        co.reset(jax.random.PRNGKey(1), co_params)[0],
        jnp.array([2]),
        co_params,
    )
    assert int(ts.extras["coplayer_actions"][0]) == 1 and float(ts.reward[0]) == 1.0  # S beats P
    # the swapped game: the column player is agent 0
    swapped = swap_roles(P.bimatrix([[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]))
    np.testing.assert_allclose(swapped, [[[5, 7], [6, 8]], [[1, 3], [2, 4]]])


def test_psro_population_of_one_is_the_initial_policy(rps):
    env, _ = rps
    out = jax.jit(make_psro(PSROConfig(population_size=1, meta_solver="uniform"), env))(
        jax.random.PRNGKey(3), PSROHParams()
    )
    assert out.policies.shape == (2, 1, 3) and out.nash_conv.shape == (1,)
    assert float(out.nash_conv[0]) == pytest.approx(2.0)  # a pure strategy in RPS
    np.testing.assert_allclose(out.meta_strategy, 1.0)


def test_psro_bad_inputs_fail_before_compile(rps):
    env, _ = rps
    with pytest.raises(ConfigError, match=r"unknown meta-solver 'nashh'.*'alpharank'.*'nash'"):
        make_psro(PSROConfig(meta_solver="nashh"), env)
    with pytest.raises(ConfigError, match="population_size must be >= 1, got 0"):
        make_psro(PSROConfig(population_size=0), env)
    with pytest.raises(ConfigError, match="best_response must be one of"):
        make_psro(PSROConfig(best_response="dqn"), env)
    with pytest.raises(ConfigError, match="br_algo must be one of.*'ippo'"):
        make_psro(PSROConfig(best_response="agent", br_algo="ppo2"), env)
    three, _ = marljax.make("matrix/public_goods-v0")
    with pytest.raises(ConfigError, match="two-player game.*3 players"):
        make_psro(PSROConfig(), three)
    grid, _ = marljax.make("matrix/two_step-v0")
    with pytest.raises(ConfigError, match="normal-form games"):
        make_psro(PSROConfig(), grid)
    ipd, ipd_params = marljax.make("matrix/ipd-v0")
    with pytest.raises(ConfigError, match="num_rounds=50"):
        make_psro(PSROConfig(), ipd, ipd_params)
    with pytest.raises(ConfigError, match="unknown meta-solver"):
        ms.get_meta_solver("fictitious")
    bos, bos_params = marljax.make("matrix/battle_of_sexes-v0")
    with pytest.raises(ConfigError, match="symmetric=True needs a symmetric game"):
        make_psro(PSROConfig(symmetric=True), bos, bos_params)


# ----------------------------------------------------------------------------- LOLA


def _two_param_values(x, y, a, b, xp=np):
    """Returns of a 2x2 game where each player's single parameter is its logit of action 0."""
    p, q = 1 / (1 + xp.exp(-x)), 1 / (1 + xp.exp(-y))
    probs = [p * q, p * (1 - q), (1 - p) * q, (1 - p) * (1 - q)]
    v1 = sum(w * r for w, r in zip(probs, a))
    v2 = sum(w * r for w, r in zip(probs, b))
    return v1, v2


def test_lola_gradient_matches_finite_differences():
    a, b = [1.0, -2.0, 3.0, 0.5], [-1.0, 2.0, 0.0, 1.5]  # a general-sum 2x2 game
    x, y, eta, h = 0.3, -0.7, 0.8, 1e-4

    def value_fn(t1, t2):
        return jnp.stack(_two_param_values(t1[0], t2[0], a, b, xp=jnp))

    g1, g2 = lola.lola_gradients(value_fn, jnp.array([x]), jnp.array([y]), eta)

    def v(i, x, y):
        return _two_param_values(x, y, a, b)[i]

    def d1(i, x, y):
        return (v(i, x + h, y) - v(i, x - h, y)) / (2 * h)

    def d2(i, x, y):
        return (v(i, x, y + h) - v(i, x, y - h)) / (2 * h)

    def d12(i, x, y):
        return (d2(i, x + h, y) - d2(i, x - h, y)) / (2 * h)

    # g_1 = d1 V1 + eta * d2 V1 * d1 d2 V2 ;  g_2 = d2 V2 + eta * d1 V2 * d1 d2 V1
    expected_1 = d1(0, x, y) + eta * d2(0, x, y) * d12(1, x, y)
    expected_2 = d2(1, x, y) + eta * d1(1, x, y) * d12(0, x, y)
    np.testing.assert_allclose(float(g1[0]), expected_1, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(float(g2[0]), expected_2, rtol=1e-4, atol=1e-6)
    # the shaping term is really there (the test would not pass with naive gradients)
    n1, _ = lola.naive_gradients(value_fn, jnp.array([x]), jnp.array([y]))
    assert abs(float(g1[0] - n1[0])) > 1e-2


def test_ipd_values_equal_the_markov_chain_solution():
    rng = np.random.default_rng(0)
    t1, t2 = rng.normal(size=5), rng.normal(size=5)
    gamma = 0.96
    got = np.asarray(lola.ipd_values(jnp.array(t1), jnp.array(t2), lola.lola_ipd_payoffs(), gamma))
    p1, p2 = 1 / (1 + np.exp(-t1)), 1 / (1 + np.exp(-t2[[0, 1, 3, 2, 4]]))
    joint = np.stack([p1 * p2, p1 * (1 - p2), (1 - p1) * p2, (1 - p1) * (1 - p2)], -1)
    r = np.array([[-1.0, -1.0], [-3.0, 0.0], [0.0, -3.0], [-2.0, -2.0]])
    expected = joint[0] @ np.linalg.solve(np.eye(4) - gamma * joint[1:], r)
    np.testing.assert_allclose(got, expected, rtol=1e-4)


def test_lola_cooperates_where_naive_learners_defect():
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    hp = lola.LOLAHParams(init_std=0.1)
    rewards = {}
    for method in ("lola", "naive"):
        config = lola.LOLAConfig(method, 60, squarings=10)  # gamma^1024 < 1e-18
        run = jax.jit(jax.vmap(lola.make_lola_ipd(config), in_axes=(0, None)))
        out = run(keys, hp)
        rewards[method] = np.asarray(out.average_reward)[:, -1].mean(-1)
        if method == "lola":  # tit-for-tat-like: cooperate after CC and DC, defect after CD, DD
            p = np.asarray(out.probabilities).mean((0, 1))
            assert p[1] > 0.8 and p[3] > 0.8 and p[2] < 0.3 and p[4] < 0.3, p
    assert (rewards["lola"] > -1.2).all() and (rewards["naive"] < -1.8).all(), rewards


def test_lola_bad_inputs():
    with pytest.raises(ConfigError, match="method must be one of"):
        lola.make_lola_ipd(lola.LOLAConfig(method="sos"))
    with pytest.raises(ConfigError, match="num_steps must be >= 1"):
        lola.make_lola_ipd(lola.LOLAConfig(num_steps=0))
    with pytest.raises(ConfigError, match=r"\[2, 2, 2\]"):
        lola.make_lola_ipd(lola.LOLAConfig(), payoffs=P.rock_paper_scissors())


def test_psro_command_prints_the_nashconv_curve_and_refuses_bad_input(tmp_path, capsys):
    import json

    from marljax.shell.cli import main

    path = tmp_path / "psro.json"
    args = ["psro", "--population", "5", "--seeds", "2", "--json", str(path)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "K=1    2.0000" in out and "K=5" in out  # RPS: a pure strategy has NashConv 2
    saved = json.loads(path.read_text())
    assert np.asarray(saved["nash_conv"]).shape == (2, 5)
    assert np.asarray(saved["nash_conv"])[:, -1].max() < 0.05  # the Nash meta-solver converged
    for bad, needle in [
        (["--meta-solver", "nsh"], "did you mean 'nash'"),
        (["--population", "0"], "population_size must be >= 1"),
        (["--env", "social/coin_game-v0"], "matrix"),
    ]:
        assert main(["psro", *bad]) == 2
        assert needle in capsys.readouterr().err.lower()


def test_aligned_advantage_equals_hand_computation():
    own = jnp.array([[1.0, 2.0, -1.0]])
    other = jnp.array([[0.5, -1.0, 2.0]])
    # past sums c = [0, 0.9 * 1, 0.9 * (0.9 + 2)] = [0, 0.9, 2.61]; A* = A1 + 0.5 c A2
    want = [[1.0, 2.0 + 0.5 * 0.9 * -1.0, -1.0 + 0.5 * 2.61 * 2.0]]
    for fn in (aa.aligned_advantages, jax.jit(aa.aligned_advantages)):
        np.testing.assert_allclose(fn(own, other, 0.5, 0.9), want, rtol=1e-6)
    np.testing.assert_allclose(aa.aligned_advantages(own, other, 0.0, 0.9), own)
    with pytest.raises(ValueError, match="same shape"):
        aa.aligned_advantages(own, other[:, :2], 0.5, 0.9)


def test_ipd_state_values_satisfy_the_bellman_equation():
    t1, t2, gamma = (
        jnp.array([0.3, -1.0, 2.0, 0.5, -0.2]),
        jnp.array([1.0, 0.0, -2.0, 1.5, 0.7]),
        0.9,
    )
    payoffs = lola.lola_ipd_payoffs()
    values = np.asarray(aa.ipd_state_values(t1, t2, payoffs, gamma, squarings=12))
    p0, trans = map(np.asarray, lola.ipd_markov_chain(t1, t2))
    rewards = np.asarray(payoffs).reshape(2, 4).T
    chain = np.concatenate([p0[None], trans])  # [5, 4] next-outcome distribution of each state
    np.testing.assert_allclose(values, chain @ (rewards + gamma * values[1:]), atol=1e-4)
    np.testing.assert_allclose(values[0], lola.ipd_values(t1, t2, payoffs, gamma), atol=1e-4)
    # advantages of a sampled episode: r + gamma V(next) - V(state), agent 2 seen own-first
    roll = aa.ipd_rollout(jax.random.PRNGKey(3), t1, t2, payoffs, 6)
    adv = np.asarray(aa.ipd_advantages(roll, jnp.asarray(values), gamma))
    s, (a, b) = np.asarray(roll.states), np.asarray(roll.actions)
    nxt = 1 + 2 * a + b
    np.testing.assert_allclose(
        adv[0], rewards[nxt - 1, 0] + gamma * values[nxt, 0] - values[s, 0], atol=1e-5
    )
    np.testing.assert_array_equal(nxt[:-1], s[1:])


def test_advantage_alignment_cooperates_where_naive_pg_defects():
    """Duque et al. 2025 on the IPD: aligned learners reciprocate; beta = 0 is naive PG."""
    config = aa.AdvantageAlignmentConfig(
        "aa", num_steps=50, num_episodes=16, num_rounds=30, squarings=10
    )
    run = aa.make_advantage_alignment_ipd(config)
    hp = aa.AdvantageAlignmentHParams(beta=jnp.array([1.0, 0.0]), init_std=0.1)
    seeds = jax.vmap(run, in_axes=(0, None))
    out = jax.jit(
        jax.vmap(seeds, in_axes=(None, aa.AdvantageAlignmentHParams(None, 0, None, None)))
    )(jax.random.split(jax.random.PRNGKey(0), 8), hp)
    reward = np.asarray(out.average_reward[:, :, -1].mean(-1))  # [2, S]
    probs = np.asarray(out.probabilities[0].mean((0, 1)))  # aligned: start, CC, CD, DC, DD
    assert (reward[0] > -1.1).all() and (reward[1] < -1.9).all(), reward
    assert probs[1] > 0.9 and probs[2] < 0.2 and probs[4] < 0.2, probs  # retaliates after CD, DD


def test_aa_ppo_aligns_the_gae_advantages_of_both_agents():
    from marljax.agents.ppo import PPOConfig

    adv = jnp.array([[[1.0, 0.5]], [[2.0, -1.0]], [[-1.0, 2.0]]])  # [T=3, E=1, 2]
    done = jnp.array([[False], [True], [False]])  # the episode ends at t = 1
    # past sums of agent 0: [0, 0.9 * 1, 0 (new episode)]; of agent 1: [0, 0.45, 0]
    np.testing.assert_allclose(
        aa.aligned_pair_advantages(adv, done, 0.5, 0.9)[:, 0],
        [[1.0, 0.5], [2.0 + 0.5 * 0.9 * -1.0, -1.0 + 0.5 * 0.45 * 2.0], [-1.0, 2.0]],
        rtol=1e-6,
    )
    np.testing.assert_array_equal(aa.aligned_pair_advantages(adv, done, 0.0, 0.9), adv)
    # the PPO update uses them: beta = 0 (IPPO) and beta = 1 in one program differ
    game, params = marljax.make("matrix/ipd-v0", num_rounds=4)
    config = PPOConfig(critic_input="local", parameter_mode="independent", hidden_sizes=(8,))
    agent = aa.make_aa_ppo(game, params, config)
    train_config = TrainConfig(num_envs=4, rollout_len=4, total_env_steps=32)
    trainer = make_train(train_config, game, agent, params)
    hp = aa.AAPPOHParams(aa_beta=jnp.array([0.0, 1.0]))
    axes = aa.AAPPOHParams(*[None] * 9, aa_beta=0)
    state = jax.jit(jax.vmap(trainer.train, in_axes=(None, axes)))(jax.random.PRNGKey(0), hp)[0]
    leaves = jax.tree.leaves(state.agent_state.actor_params)
    assert any(not np.allclose(x[0], x[1]) for x in leaves)
    with pytest.raises(ConfigError, match="two-player"):
        aa.make_aa_ppo(*marljax.make("matrix/public_goods-v0"))


def test_advantage_alignment_bad_inputs():
    with pytest.raises(ConfigError, match="aa"):
        aa.make_advantage_alignment_ipd(aa.AdvantageAlignmentConfig(method="lola"))
    with pytest.raises(ConfigError):
        aa.make_advantage_alignment_ipd(aa.AdvantageAlignmentConfig(num_rounds=0))
    with pytest.raises(ConfigError, match=r"\[2, 2, 2\]"):
        aa.make_advantage_alignment_ipd(
            aa.AdvantageAlignmentConfig(), payoffs=P.rock_paper_scissors()
        )


def test_pool_strategy_draws_a_member_per_episode_and_plays_it():
    coop, defect = strategies.always_cooperate(), strategies.always_defect()
    uniform = pool.pool_strategy([coop, defect])
    ks = jax.vmap(lambda k: uniform.init(k)[0])(jax.random.split(jax.random.PRNGKey(0), 400))
    assert 0.4 < float(ks.mean()) < 0.6, float(ks.mean())  # both members drawn, about evenly
    none = jnp.array([-1, -1]), jnp.zeros(2)
    acts = jax.vmap(lambda k: uniform.act(uniform.init(k), *none, 1, k)[0])(
        jax.random.split(jax.random.PRNGKey(0), 400)
    )
    np.testing.assert_array_equal(acts, ks)  # member k plays action k here
    # a stateful member keeps its state through the switch: grim trigger stays triggered
    grim = pool.pool_strategy([strategies.always_cooperate(), strategies.grim_trigger()], [0, 1])
    state = grim.init(jax.random.PRNGKey(1))
    a1, state = grim.act(state, jnp.array([1, 0]), jnp.zeros(2), 1, jax.random.PRNGKey(2))
    a2, state = grim.act(state, jnp.array([0, 1]), jnp.zeros(2), 1, jax.random.PRNGKey(3))
    assert (int(a1), int(a2)) == (1, 1)
    with pytest.raises(ValueError, match="empty"):
        pool.pool_strategy([])
    with pytest.raises(ValueError, match="weights"):
        pool.pool_strategy([coop, defect], [1.0])


def test_pool_training_and_crossplay_seat_each_seed():
    game, params = marljax.make("matrix/ipd-v0", num_rounds=4)
    built = pool.make_pool_training(
        game, [strategies.tit_for_tat()], TrainConfig(num_envs=4, rollout_len=4, total_env_steps=16)
    )
    assert built.env.num_agents == 1

    # an agent whose state is its (fixed) action: seed 0 cooperates, seed 1 defects
    def act(state, carry, obs, key, hparams, greedy=False):
        assert obs.obs.shape[1] == 1  # each seat sees its own slice
        return jnp.broadcast_to(state, obs.obs.shape[:2]).astype(jnp.int32), carry, ()

    fixed = built.agent._replace(act=act, initial_carry=lambda n: ())
    table = np.asarray(
        pool.pool_crossplay(
            game, params, fixed, jnp.array([0, 1]), None, jax.random.PRNGKey(0), 4, 2
        )
    )
    # 4 rounds of (R, S, T, P) = (3, 0, 5, 1)
    np.testing.assert_allclose(table, [[[12, 12], [0, 20]], [[20, 0], [4, 4]]])
    with pytest.raises(ConfigError, match="two-player"):
        pool.make_pool_training(
            marljax.make("matrix/public_goods-v0")[0], [strategies.tit_for_tat()], TrainConfig()
        )
    with pytest.raises(ConfigError, match="ippo"):
        pool.make_pool_training(game, [strategies.tit_for_tat()], TrainConfig(), algo="ppo2")


def test_agent_strategy_sees_its_seat_like_in_training():
    game, params = marljax.make("matrix/ipd-v0", num_rounds=4)
    built = pool.make_pool_training(
        game, [strategies.tit_for_tat()], TrainConfig(num_envs=4, rollout_len=4, total_env_steps=16)
    )

    def copy_other(state, carry, obs, key, hparams, greedy=False):  # tit-for-tat from the obs
        other = obs.obs[..., 2:4]  # ego-centred: own last action, then the other's
        return jnp.where(other.sum(-1) > 0, jnp.argmax(other, -1), 0).astype(jnp.int32), carry, ()

    snap = pool.agent_strategy(game, params, built.agent._replace(act=copy_other), None, None)
    tft = strategies.tit_for_tat()
    state = snap.init(jax.random.PRNGKey(0))
    history = [jnp.array([-1, -1]), jnp.array([1, 0]), jnp.array([0, 1]), jnp.array([1, 1])]
    for last in history:
        got, state = snap.act(state, last, jnp.zeros(2), 1, jax.random.PRNGKey(1))
        want, _ = tft.act((), last, jnp.zeros(2), 1, jax.random.PRNGKey(1))
        assert int(got) == int(want), (last, got, want)
    assert int(state[1]) == len(history)


def test_parse_pool_reads_names_and_weights_and_names_bad_input():
    assert pool.parse_pool("pool:tit_for_tat,always_defect=0.5") == (
        ("tit_for_tat", "always_defect"),
        (1.0, 0.5),
    )
    strats, weights = pool.pool_from_spec("pool: random = 2 ,cycle", 3)
    assert len(strats) == 2 and weights == (2.0, 1.0)
    for bad, needle in [
        ("tit_for_tat", "pool:name"),
        ("pool:", "empty pool"),
        ("pool:tit_for_tatt", "did you mean tit_for_tat"),
        ("pool:always_defect=x", "non-negative number"),
        ("pool:always_defect=-1", "non-negative number"),
        ("pool:always_defect=0", "sum to 0"),
        ("pool:random,random", "twice"),
    ]:
        with pytest.raises(ConfigError) as err:
            pool.parse_pool(bad)
        assert needle in str(err.value).lower(), (bad, err.value)


def test_train_command_trains_against_a_pool_and_psro_alias(tmp_path, capsys):
    import json

    from marljax.shell.cli import main
    from marljax.shell.experiment import Experiment, build

    # one learner against always-cooperate: 4 rounds pay 3 (C) or 5 (D) each
    args = ["train", "--algo", "ippo", "--env", "matrix/ipd-v0", "--set", "env.num_rounds=4",
            "--opponents", "pool:always_cooperate", "--seeds", "1", "--steps", "128",
            "--no-progress", "--out", str(tmp_path), "--name", "run"]  # fmt: skip
    assert main(args) == 0
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["experiment"]["opponents"] == "pool:always_cooperate"
    built = build(Experiment.from_dict(config))  # the run directory rebuilds the same env
    assert built.env.num_agents == 1
    final = np.load(tmp_path / "run" / "metrics.npz")["eval/episode_return"][..., -1]
    assert 12.0 <= final.min() and final.max() <= 20.0, final
    for bad, needle in [
        (["--opponents", "pool:tft"], "unknown co-player strategy 'tft'"),
        (["--env", "matrix/public_goods-v0", "--opponents", "pool:random"], "two-player"),
        (["--env", "social/coin_game-v0", "--opponents", "pool:random"], "repeated matrix"),
    ]:
        assert main(["train", "--algo", "ippo", *bad, "--out", str(tmp_path)]) == 2
        assert needle in capsys.readouterr().err
    assert len(list(tmp_path.iterdir())) == 1  # refused before any run directory
    # --algo psro runs the PSRO command: fictitious play on RPS, exact best responses
    capsys.readouterr()
    psro = ["train", "--algo", "psro", "--seeds", "2", "--set", "population_size=3",
            "--set", "meta_solver=uniform"]  # fmt: skip
    assert main(psro) == 0
    out = capsys.readouterr().out
    assert "meta-solver uniform" in out and "K=3    1.0000" in out
    assert main(["train", "--algo", "psro", "--set", "meta_solvr=nash"]) == 2
    assert "did you mean 'meta_solver'" in capsys.readouterr().err.lower()
    assert main(["train", "--algo", "psro", "--grid", "lr=1,2"]) == 2
    assert "--grid" in capsys.readouterr().err
