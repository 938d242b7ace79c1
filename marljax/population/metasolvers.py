"""Meta-solvers: mixed strategies over the members of two populations from their payoff matrix.

A meta-solver maps an empirical two-player game between populations to one mixed strategy per
player over that player's members (PSRO's "meta-strategy", Lanctot et al. 2017):

    sigma = solver(payoffs, mask, hparams, iterations)

- `payoffs`: `[2, K, K]` float32, `payoffs[i, a, b]` is player `i`'s payoff when player 0 plays
  its member `a` and player 1 its member `b` (the layout of `marljax.envs.matrix.payoffs`, with
  members in place of actions). The game may be general-sum.
- `mask`: `[2, K]` bool, which members exist (PSRO grows its populations inside a fixed-size
  array, so a compiled program serves every iteration). Masked members get probability 0.
- `hparams`: a `MetaSolverHParams` (traced: sweep it with `vmap`).
- `iterations`: static number of iterations of the iterative solvers.
- returns `[2, K]` float32 rows on the simplex of the valid members.

Solvers (the registry `META_SOLVERS`, looked up by `get_meta_solver`):

- `uniform`: the uniform mixture; PSRO with it is fictitious play (Brown 1951).
- `last`: all mass on the newest member; PSRO with it is (iterated best-response) self-play.
- `nash`: the averaged strategies of regret matching+ with alternating updates and linear
  averaging (Tammelin et al. 2015). In two-player zero-sum games the average converges to a
  Nash equilibrium (error `O(1/sqrt(T))`); in general-sum games it converges to a coarse
  correlated equilibrium and the marginals returned are only an approximation of a Nash one.
- `prd`: projected replicator dynamics, the PSRO paper's general-sum solver: Euler steps of the
  replicator dynamics, each followed by a floor of `prd_floor / K` on every valid member and a
  renormalisation (a cheap stand-in for the exact projection onto the floored simplex); the
  time-average of the iterates is returned.
- `alpharank`: the two-population alpha-rank of Omidshafiei et al. (2019): the stationary
  distribution of a Markov chain over joint members in which one player at a time mutates to
  another of its members with fixation probability
  `rho(d) = (1 - exp(-alpha d)) / (1 - exp(-alpha m d))` (`d` the payoff gain of the mutant,
  `m` the population size, `rho(0) = 1/m`), marginalised per player. The stationary
  distribution comes from repeated squaring of the `K^2 x K^2` transition matrix (no linear
  solve, so it is safe under `vmap`); it costs `O(K^6 log)` and is meant for `K <= 16` or so.
- `rae`: the risk-averse equilibrium of Slumbers et al. (2023), computed by fictitious play on
  the mean-variance utility defined in `risk_averse_utility`.

References:
  M. Lanctot et al., "A unified game-theoretic approach to multiagent reinforcement learning",
  NeurIPS 2017. O. Tammelin et al., "Solving heads-up limit Texas hold'em", IJCAI 2015.
  S. Omidshafiei et al., "alpha-Rank: Multi-agent evaluation by evolution", Scientific Reports
  9, 2019. O. Slumbers, D. H. Mguni, S. M. McAleer, S. B. Blumberg, J. Wang, Y. Yang,
  "A Game-Theoretic Framework for Managing Risk in Multi-Agent Systems", ICML 2023
  (arXiv:2205.15434).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable

import jax
import jax.numpy as jnp
from flax import struct

from marljax.core.config import ConfigError, param

Array = jax.Array

#: `solver(payoffs [2, K, K], mask [2, K], hparams, iterations) -> [2, K]`
MetaSolver = Callable[[Array, Array, "MetaSolverHParams", int], Array]


@struct.dataclass
class MetaSolverHParams:
    """Traced hyperparameters of the meta-solvers (only the chosen solver reads its own).

    Attributes:
      prd_step: Euler step of projected replicator dynamics (`prd`).
      prd_floor: total probability floor of `prd`, spread over the valid members.
      alpha: selection intensity of alpha-rank (`alpharank`).
      alpharank_population: population size `m` of alpha-rank's fixation probability.
      risk_aversion: weight `lambda` of the payoff variance in the risk-averse utility (`rae`).
      risk_epsilon: opponent trembling `epsilon` under which `rae` measures the variance.
      rae_inner_steps: projected-gradient steps of each risk-averse best response (`rae`).
    """

    prd_step: float = param(0.1, lo=0.0, lo_open=True, help="Euler step of prd.")
    prd_floor: float = param(1e-3, lo=0.0, hi=1.0, help="probability floor of prd.")
    alpha: float = param(10.0, lo=0.0, help="selection intensity of alpha-rank.")
    alpharank_population: float = param(
        50.0, lo=1.0, help="population size m of alpha-rank's fixation probability."
    )
    risk_aversion: float = param(1.0, lo=0.0, help="variance weight lambda of rae.")
    risk_epsilon: float = param(0.1, lo=0.0, hi=1.0, help="opponent trembling of rae.")
    rae_inner_steps: int = struct.field(pytree_node=False, default=50)


# ----------------------------------------------------------------------------- helpers


def _check(payoffs: Array, mask: Array | None) -> tuple[Array, Array]:
    shape = jnp.shape(payoffs)
    if len(shape) != 3 or shape[0] != 2 or shape[1] != shape[2]:
        raise ValueError(
            f"meta-solvers take a two-player payoff tensor [2, K, K] (general-sum), got {shape}"
        )
    if mask is None:
        mask = jnp.ones((2, shape[1]), jnp.bool_)
    if jnp.shape(mask) != (2, shape[1]):
        raise ValueError(f"mask must have shape [2, K] = {(2, shape[1])}, got {jnp.shape(mask)}")
    return jnp.asarray(payoffs, jnp.float32), jnp.asarray(mask, jnp.bool_)


def _uniform(mask: Array) -> Array:
    m = mask.astype(jnp.float32)
    return m / jnp.maximum(m.sum(-1, keepdims=True), 1.0)


def _normalise(x: Array, mask: Array) -> Array:
    """`x / sum(x)` over the valid entries; the uniform strategy where the sum is 0."""
    x = jnp.where(mask, x, 0.0)
    total = x.sum(-1, keepdims=True)
    return jnp.where(total > 0, x / jnp.where(total > 0, total, 1.0), _uniform(mask))


def _row_view(payoffs: Array) -> tuple[Array, Array]:
    """Both players' payoffs as `[own member, other's member]` tables."""
    return payoffs[0], payoffs[1].T


# ----------------------------------------------------------------------------- solvers


def uniform(payoffs: Array, mask: Array | None = None, hparams=None, iterations: int = 0) -> Array:
    """The uniform mixture over each player's valid members (fictitious play's meta-solver).

    Args:
      payoffs: `[2, K, K]` payoffs of the empirical game (unused but for its shape).
      mask: optional `[2, K]` bool valid members (default: all).
      hparams: unused.
      iterations: unused.

    Returns:
      `[2, K]` meta-strategies.
    """
    _, mask = _check(payoffs, mask)
    return _uniform(mask)


def last(payoffs: Array, mask: Array | None = None, hparams=None, iterations: int = 0) -> Array:
    """All mass on each player's newest (highest-index valid) member: self-play.

    Args:
      payoffs: `[2, K, K]` payoffs of the empirical game (unused but for its shape).
      mask: optional `[2, K]` bool valid members (default: all).
      hparams: unused.
      iterations: unused.

    Returns:
      `[2, K]` one-hot meta-strategies.
    """
    _, mask = _check(payoffs, mask)
    k = mask.shape[-1]
    newest = jnp.max(jnp.where(mask, jnp.arange(k), 0), axis=-1)
    return jax.nn.one_hot(newest, k, dtype=jnp.float32)


def regret_matching(
    payoffs: Array,
    mask: Array | None = None,
    hparams: MetaSolverHParams | None = None,
    iterations: int = 1000,
) -> Array:
    """Nash by regret matching+ with alternating updates and linearly weighted averages.

    Each iteration player 0 updates its cumulative clipped regrets
    `R_0 <- max(R_0 + u_0 - <x, u_0>, 0)` (`u_0 = A y`) and plays `x = R_0 / sum R_0`; then
    player 1 does the same against the new `x`. The returned strategies are the averages of the
    iterates weighted by the iteration number. Exact in the limit for two-player zero-sum games;
    for general-sum games see the module docstring.

    Args:
      payoffs: `[2, K, K]` payoffs of the empirical game.
      mask: optional `[2, K]` bool valid members (default: all).
      hparams: unused.
      iterations: number of iterations `T` (static).

    Returns:
      `[2, K]` meta-strategies.
    """
    payoffs, mask = _check(payoffs, mask)
    tables = _row_view(payoffs)  # own x other

    def player_step(regret, strat_other, table, m):
        u = table @ strat_other
        x = _normalise(jnp.maximum(regret, 0.0), m)
        regret = jnp.maximum(regret + jnp.where(m, u - x @ u, 0.0), 0.0)
        return regret, _normalise(regret, m)

    def body(carry, t):
        r0, r1, x, y, sx, sy = carry
        r0, x = player_step(r0, y, tables[0], mask[0])
        r1, y = player_step(r1, x, tables[1], mask[1])
        w = t.astype(jnp.float32) + 1.0
        return (r0, r1, x, y, sx + w * x, sy + w * y), None

    zeros = jnp.zeros(mask.shape[-1], jnp.float32)
    start = _uniform(mask)
    init = (zeros, zeros, start[0], start[1], zeros, zeros)
    (_, _, _, _, sx, sy), _ = jax.lax.scan(body, init, jnp.arange(iterations))
    return _normalise(jnp.stack([sx, sy]), mask)


def projected_replicator_dynamics(
    payoffs: Array,
    mask: Array | None = None,
    hparams: MetaSolverHParams | None = None,
    iterations: int = 1000,
) -> Array:
    """Projected replicator dynamics (Lanctot et al. 2017), time-averaged.

    `x <- floor(x + dt * x * (A y - <x, A y>))`, simultaneously for both players, where
    `floor` raises every valid entry to at least `prd_floor / K_valid` and renormalises.

    Args:
      payoffs: `[2, K, K]` payoffs of the empirical game.
      mask: optional `[2, K]` bool valid members (default: all).
      hparams: `MetaSolverHParams` (`prd_step`, `prd_floor`).
      iterations: number of Euler steps (static).

    Returns:
      `[2, K]` meta-strategies.
    """
    payoffs, mask = _check(payoffs, mask)
    hp = hparams if hparams is not None else MetaSolverHParams()
    tables = _row_view(payoffs)
    floor = hp.prd_floor * _uniform(mask)

    def body(carry, _):
        strat, total = carry
        u = jnp.stack([tables[0] @ strat[1], tables[1] @ strat[0]])  # [2, K]
        value = jnp.sum(strat * u, axis=-1, keepdims=True)
        strat = strat + hp.prd_step * strat * (u - value)
        strat = _normalise(jnp.maximum(strat, floor), mask)
        return (strat, total + strat), None

    start = _uniform(mask)
    (_, total), _ = jax.lax.scan(body, (start, jnp.zeros_like(start)), None, length=iterations)
    return _normalise(total, mask)


def fixation_probability(gain: Array, alpha: Array, population: Array) -> Array:
    """Fixation probability of a mutant in alpha-rank's finite-population model.

    `rho(d) = (1 - exp(-alpha d)) / (1 - exp(-alpha m d))`, `rho(0) = 1/m`, evaluated in a form
    that neither overflows nor loses precision for large `|alpha d|`.

    Args:
      gain: `[...]` payoff gain `d` of the mutant over the resident.
      alpha: `[]` selection intensity (>= 0).
      population: `[]` population size `m` (>= 1).

    Returns:
      `[...]` fixation probabilities in `[0, 1]`.
    """
    x = alpha * gain
    y = jnp.abs(x)
    safe = jnp.where(y > 1e-8, y, 1.0)
    ratio = jnp.expm1(-safe) / jnp.expm1(-population * safe)  # the x > 0 value for x = |x|
    rho = jnp.where(x > 0, ratio, jnp.exp(-(population - 1.0) * safe) * ratio)
    return jnp.where(y > 1e-8, rho, 1.0 / population)


def alpharank(
    payoffs: Array,
    mask: Array | None = None,
    hparams: MetaSolverHParams | None = None,
    iterations: int = 40,
) -> Array:
    """Two-population alpha-rank (Omidshafiei et al. 2019), marginalised per player.

    The chain lives on joint members `(a, b)`. From `(a, b)` player 0 mutates to `a' != a` with
    probability `eta * rho(P0[a', b] - P0[a, b])` and player 1 to `b' != b` with
    `eta * rho(P1[a, b'] - P1[a, b])`, `eta = 1 / ((K_0 - 1) + (K_1 - 1))`; the rest stays. The
    stationary distribution is the limit of `T^(2^iterations)` applied to the uniform
    distribution (repeated squaring), so `iterations` around 40 suffices for any chain that
    mixes in fewer than `2^40` steps.

    Args:
      payoffs: `[2, K, K]` payoffs of the empirical game.
      mask: optional `[2, K]` bool valid members (default: all).
      hparams: `MetaSolverHParams` (`alpha`, `alpharank_population`).
      iterations: number of squarings (static).

    Returns:
      `[2, K]` meta-strategies (the marginals of the stationary distribution).
    """
    payoffs, mask = _check(payoffs, mask)
    hp = hparams if hparams is not None else MetaSolverHParams()
    k = mask.shape[-1]
    m0, m1 = mask[0], mask[1]
    n0, n1 = m0.sum(), m1.sum()
    eta = 1.0 / jnp.maximum((n0 - 1) + (n1 - 1), 1).astype(jnp.float32)
    p0, p1 = payoffs[0], payoffs[1]
    # player 0 mutations: from (a, b) to (a2, b), gain p0[a2, b] - p0[a, b]   -> [a, b, a2]
    rho0 = fixation_probability(
        p0.T[None, :, :] - p0[:, :, None], hp.alpha, hp.alpharank_population
    )
    rho0 = eta * rho0 * (m0[None, None, :] & ~jnp.eye(k, dtype=bool)[:, None, :])
    # player 1 mutations: from (a, b) to (a, b2), gain p1[a, b2] - p1[a, b]   -> [a, b, b2]
    rho1 = fixation_probability(p1[:, None, :] - p1[:, :, None], hp.alpha, hp.alpharank_population)
    rho1 = eta * rho1 * (m1[None, None, :] & ~jnp.eye(k, dtype=bool)[None, :, :])
    eye = jnp.eye(k, dtype=jnp.float32)
    # T[(a, b), (a2, b2)]
    trans = (
        rho0[:, :, :, None] * eye[None, :, None, :] + rho1[:, :, None, :] * eye[:, None, :, None]
    )
    trans = trans.reshape(k * k, k * k)
    stay = 1.0 - trans.sum(-1)
    valid = (m0[:, None] & m1[None, :]).reshape(-1)
    # invalid joint members jump to (0, 0) and are never entered, so they carry no mass
    trans = jnp.where(valid[:, None], trans + jnp.diag(stay), jax.nn.one_hot(0, k * k))

    def square(t, _):
        t = t @ t
        return t / t.sum(-1, keepdims=True), None  # keep rows stochastic against rounding

    power, _ = jax.lax.scan(square, trans, None, length=iterations)
    start = valid.astype(jnp.float32) / valid.sum()
    stationary = (start @ power).reshape(k, k)
    return _normalise(jnp.stack([stationary.sum(1), stationary.sum(0)]), mask)


def risk_averse_utility(
    table: Array,
    strat: Array,
    strat_other: Array,
    risk_aversion: Array,
    epsilon: Array,
    mask_other: Array | None = None,
) -> Array:
    """The mean-variance utility whose equilibrium is the risk-averse equilibrium (RAE).

    With the opponent trembling to `q = (1 - epsilon) y + epsilon * uniform` (uniform over its
    valid members), player `i`'s payoff of its member `a` is the random variable `A[a, b]`,
    `b ~ q`. Its mean is `mu = A q` and the covariance across `i`'s members is
    `Sigma[a, a'] = sum_b q_b (A[a, b] - mu_a)(A[a', b] - mu_a')`. A mixed strategy `x` then has
    expected payoff `x . mu` and payoff variance `x^T Sigma x` (the variance that the other
    player's randomisation causes, `i`'s own randomisation averaged out), and

        U(x; y) = x . mu - (lambda / 2) x^T Sigma x.

    A profile is a risk-averse equilibrium when each player's strategy maximises its `U`
    against the other's; with `lambda = 0` and `epsilon = 0` it is a Nash equilibrium.
    (Our reading of Slumbers et al. 2023, who define the RAE by the minimum-variance strategy
    at a given expected utility, i.e. this mean-variance trade-off, and measure the variance
    against perturbed opponent strategies so that low-probability actions count.)

    Args:
      table: `[K, K']` the player's payoffs, `[own member, other's member]`.
      strat: `[K]` the player's mixed strategy `x`.
      strat_other: `[K']` the other player's mixed strategy `y`.
      risk_aversion: `[]` `lambda >= 0`.
      epsilon: `[]` trembling probability in `[0, 1]`.
      mask_other: optional `[K']` bool valid members of the other player.

    Returns:
      `[]` the utility `U(x; y)`.
    """
    mask_other = jnp.ones(table.shape[1], bool) if mask_other is None else mask_other
    q = (1.0 - epsilon) * strat_other + epsilon * _uniform(mask_other[None])[0]
    mu = table @ q
    centred = table - mu[:, None]
    sigma = (centred * q[None, :]) @ centred.T
    return strat @ mu - 0.5 * risk_aversion * strat @ sigma @ strat


def project_to_simplex(v: Array, mask: Array | None = None) -> Array:
    """Euclidean projection onto the probability simplex of the valid entries.

    `argmin_x ||x - v||` over `x >= 0`, `sum(x) = 1`, `x = 0` where `mask` is false
    (Duchi et al. 2008, by sorting: `x = max(v - theta, 0)`).

    Args:
      v: `[K]` any real vector.
      mask: optional `[K]` bool valid entries (default: all).

    Returns:
      `[K]` the projection.
    """
    mask = jnp.ones(v.shape, bool) if mask is None else mask
    low = jnp.min(jnp.where(mask, v, jnp.inf)) - 1.0  # invalid entries sort last, end at 0
    w = jnp.where(mask, v, low - jnp.sum(jnp.abs(jnp.where(mask, v, 0.0))) - 1.0)
    u = jnp.sort(w)[::-1]
    css = jnp.cumsum(u)
    j = jnp.arange(1, v.shape[-1] + 1, dtype=v.dtype)
    support = (u - (css - 1.0) / j > 0) & (j <= mask.sum())
    rho = jnp.max(jnp.where(support, j, 1.0))
    theta = (jnp.take(css, rho.astype(jnp.int32) - 1) - 1.0) / rho
    return jnp.where(mask, jnp.maximum(w - theta, 0.0), 0.0)


def risk_averse_equilibrium(
    payoffs: Array,
    mask: Array | None = None,
    hparams: MetaSolverHParams | None = None,
    iterations: int = 500,
) -> Array:
    """Risk-averse equilibrium (Slumbers et al. 2023) by fictitious play on the mean-variance game.

    Each iteration both players compute a risk-averse best response, `argmax_x U(x; y_bar)` of
    `risk_averse_utility` against the other's running average `y_bar`: a concave quadratic
    program over the simplex, solved by `rae_inner_steps` steps of projected gradient ascent
    (`project_to_simplex`) with step `1 / L`, `L = lambda * trace(Sigma)` bounding the
    curvature (with `lambda = 0` the step is large and one step reaches the pure best
    response). The averages move towards the best responses with weight `1 / (t + 2)`, as in
    the paper's fictitious-play algorithm.

    Args:
      payoffs: `[2, K, K]` payoffs of the empirical game.
      mask: optional `[2, K]` bool valid members (default: all).
      hparams: `MetaSolverHParams` (`risk_aversion`, `risk_epsilon`, `rae_inner_steps`).
      iterations: number of fictitious-play iterations (static).

    Returns:
      `[2, K]` meta-strategies.
    """
    payoffs, mask = _check(payoffs, mask)
    hp = hparams if hparams is not None else MetaSolverHParams()
    tables = _row_view(payoffs)
    valid = mask[0][:, None] & mask[1][None, :]
    spread = jnp.where(valid, payoffs, 0.0)
    scale = jnp.maximum(jnp.max(spread) - jnp.min(spread), 1e-6)

    def best_response(table, other, m, m_other):
        grad_fn = jax.grad(risk_averse_utility, argnums=1)
        q = (1.0 - hp.risk_epsilon) * other + hp.risk_epsilon * _uniform(m_other[None])[0]
        centred = jnp.where(m[:, None] & m_other[None, :], table - (table @ q)[:, None], 0.0)
        curvature = hp.risk_aversion * jnp.sum(centred**2 * q[None, :])  # lambda * trace(Sigma)
        step = 1.0 / jnp.maximum(curvature, 1e-3 / scale)

        def ascend(x, _):
            g = grad_fn(table, x, other, hp.risk_aversion, hp.risk_epsilon, m_other)
            return project_to_simplex(x + step * g, m), None

        x, _ = jax.lax.scan(ascend, _uniform(m[None])[0], None, length=hp.rae_inner_steps)
        return x

    def body(avg, t):
        br0 = best_response(tables[0], avg[1], mask[0], mask[1])
        br1 = best_response(tables[1], avg[0], mask[1], mask[0])
        w = 1.0 / (t.astype(jnp.float32) + 2.0)
        return avg + w * (jnp.stack([br0, br1]) - avg), None

    avg, _ = jax.lax.scan(body, _uniform(mask), jnp.arange(iterations))
    return _normalise(avg, mask)


# ----------------------------------------------------------------------------- registry

#: meta-solvers by name (see the module docstring).
META_SOLVERS: dict[str, MetaSolver] = {
    "uniform": uniform,
    "last": last,
    "nash": regret_matching,
    "prd": projected_replicator_dynamics,
    "alpharank": alpharank,
    "rae": risk_averse_equilibrium,
}


def get_meta_solver(name: str) -> MetaSolver:
    """The meta-solver registered under `name`.

    Args:
      name: one of `META_SOLVERS` (`uniform`, `last`, `nash`, `prd`, `alpharank`, `rae`).

    Returns:
      The solver function `(payoffs, mask, hparams, iterations) -> [2, K]`.

    Raises:
      ConfigError: unknown name (the message lists the known ones and close matches).
    """
    if name not in META_SOLVERS:
        close = difflib.get_close_matches(str(name), list(META_SOLVERS), n=2, cutoff=0.5)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise ConfigError(
            f"unknown meta-solver {name!r}; known meta-solvers: {sorted(META_SOLVERS)}.{hint}"
        )
    return META_SOLVERS[name]
