"""The conformance kit on EVERY registered environment, of every family."""

from __future__ import annotations

import pytest

import marljax
import marljax.testing  # noqa: F401  (registers testing/counting-v0)
from marljax.testing import check_env


@pytest.mark.parametrize("env_id", marljax.registered_envs())
def test_check_env(env_id, make_for_checks):
    env, params = make_for_checks(env_id)
    check_env(env, params, num_steps=6, num_envs=2)


def test_every_family_is_registered():
    families = {i.split("/")[0] for i in marljax.registered_envs()}
    assert "matrix" in families
