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
