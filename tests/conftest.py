"""Shared pytest fixtures."""

import jax
import pytest

from marljax.testing import CountingEnv


@pytest.fixture
def key() -> jax.Array:
    """A fixed PRNG key (tests are deterministic)."""
    return jax.random.PRNGKey(0)


@pytest.fixture
def counting() -> CountingEnv:
    """The toy env of `marljax.testing` with two agents."""
    return CountingEnv(num_agents=2)


#: make() options of the registry-wide checks (conformance, property tests) for envs whose
#: default build is dominated by compile time: the RoShamBo population and league with 3 of its 43 bots
#: (the two most complex and a trivial one); every bot is checked in tests/test_rps_*.py.
CHECK_BOTS = {"bots": ("rockbot", "iocainebot", "halbot")}
CHECK_OPTIONS = {"matrix/rrps_population-v0": CHECK_BOTS, "matrix/rrps_league-v0": CHECK_BOTS}


@pytest.fixture
def make_for_checks():
    """`make_for_checks(env_id) -> (env, params)`: `marljax.make` with `CHECK_OPTIONS`."""
    import marljax

    return lambda env_id: marljax.make(env_id, **CHECK_OPTIONS.get(env_id, {}))
