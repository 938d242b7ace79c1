"""`social/coin_game_jaxmarl-v0` against JaxMARL 0.2.0's `coin_game`, step by step.

The two frameworks draw their random numbers differently, so parity is checked in two parts:

- deterministic part, exactly: JaxMARL steps (`step_env`, plus its own reset when its episode
  ends, as marljax's `AutoReset` does) with random actions for hundreds of steps; at every step
  the same state (converted) and actions go through `CoinGameJaxMARL.transition`, whose random
  cells are taken from JaxMARL's next state where JaxMARL used them (a coin its statistics say was
  picked up, every position on a restart step) and are decoys elsewhere, so a coin or agent that
  moves when JaxMARL's does not is caught. Observations, rewards, done flags, the inner-episode
  flag and the next state must be equal;
- random part, in distribution: reset positions and respawned coins are uniform over all cells
  (agents' cells included) in both.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marljax
from marljax.envs.social import CoinDraws, CoinGameJaxMARLState

jaxmarl = pytest.importorskip("jaxmarl")

NUM_SEEDS = 3
NUM_STEPS = 250  # 2.5 JaxMARL episodes of 10 x 10 steps
CASES = {
    "default": ({}, {}),
    "egocentric_payoffs_shared": (
        {"egocentric": True, "own_coin_reward": 2.0, "other_coin_reward": 1.0,
         "owner_penalty": -3.0, "shared_rewards": True},
        {"egocentric": True, "payoff_matrix": [[2, 1, -3], [1, 2, -3]], "shared_rewards": True},
    ),
}  # fmt: skip


def _agents(s) -> jax.Array:
    return jnp.stack([s.red_pos, s.blue_pos]).astype(jnp.int32)


def _coins(s) -> jax.Array:
    return jnp.stack([s.red_coin_pos, s.blue_coin_pos]).astype(jnp.int32)


def _from_jaxmarl(s, inner_steps: int) -> CoinGameJaxMARLState:
    """marljax's state of JaxMARL's (`t` counts the steps of the whole 10 x 10 episode)."""
    return CoinGameJaxMARLState(
        agent_pos=_agents(s), coin_pos=_coins(s), t=(s.outer_t * inner_steps + s.step)
    )


def _decoy(pos: jax.Array) -> jax.Array:
    """A cell other than `pos` on the 3x3 torus."""
    return pos.at[..., 1].set((pos[..., 1] + 1) % 3)


def _draws(s, s_next, restart) -> CoinDraws:
    """The cells JaxMARL drew where it used them, decoys elsewhere."""
    red_taken = jnp.sum(s_next.red_coop + s_next.blue_defect) > jnp.sum(s.red_coop + s.blue_defect)
    blue_taken = jnp.sum(s_next.blue_coop + s_next.red_defect) > jnp.sum(s.blue_coop + s.red_defect)
    taken = jnp.stack([red_taken, blue_taken])[:, None]
    coins_next, agents_next = _coins(s_next), _agents(s_next)
    return CoinDraws(
        respawn_pos=jnp.where(taken & ~restart, coins_next, _decoy(coins_next)),
        restart_agent_pos=jnp.where(restart, agents_next, _decoy(agents_next)),
        restart_coin_pos=jnp.where(restart, coins_next, _decoy(coins_next)),
    )


def _make_rollout(ref, env, params):
    """`rollout(key) -> (ours, theirs)`: per-step outputs `[T, ...]` of both frameworks."""
    inner = int(params.inner_steps)

    def rollout(key):
        key_reset, key_run = jax.random.split(key)
        _, s0 = ref.reset(key_reset)

        def body(s, key_t):
            key_act, key_step, key_reset = jax.random.split(key_t, 3)
            a = jax.random.randint(key_act, (2,), 0, 5)
            obs, s_next, rew, dones, info = ref.step_env(key_step, s, {"0": a[0], "1": a[1]})
            restart = info["inner_episode_done"]
            mine, ts = env.transition(
                _from_jaxmarl(s, inner), a, _draws(s, s_next, restart), params
            )
            theirs_next = _from_jaxmarl(s_next, inner)
            ours = (ts.obs.reshape(2, -1), ts.reward, ts.done, ts.extras["inner_episode_done"])
            theirs = (
                jnp.stack([obs["0"], obs["1"]]),
                jnp.stack([rew["0"], rew["1"]]),
                dones["__all__"],
                restart,
            )
            # JaxMARL's own reset at the end of its episode (what marljax's AutoReset does).
            _, s_reset = ref.reset(key_reset)
            s_after = jax.tree.map(lambda x, y: jnp.where(dones["__all__"], x, y), s_reset, s_next)
            return s_after, (ours + (mine,), theirs + (theirs_next,))

        return jax.lax.scan(body, s0, jax.random.split(key_run, NUM_STEPS))[1]

    return jax.jit(jax.vmap(rollout))


@pytest.mark.parametrize("case", sorted(CASES))
def test_step_by_step_parity(case):
    ours_kw, theirs_kw = CASES[case]
    env, params = marljax.make("social/coin_game_jaxmarl-v0", **ours_kw)
    ref = jaxmarl.make("coin_game", **theirs_kw)
    ours, theirs = _make_rollout(ref, env, params)(jax.random.split(jax.random.key(7), NUM_SEEDS))
    names = ("obs", "reward", "done", "inner_episode_done")
    for name, x, y in zip(names, ours[:4], theirs[:4], strict=True):
        np.testing.assert_array_equal(np.asarray(x, np.float32), np.asarray(y, np.float32), name)
    for field in ("agent_pos", "coin_pos", "t"):
        x, y = getattr(ours[4], field), getattr(theirs[4], field)
        np.testing.assert_array_equal(x, y, f"next state {field}")
    # The rollouts exercised every mechanism (pickups, restarts, episode ends).
    reward, done, restart = map(np.asarray, theirs[1:4])
    assert (reward != 0).any(axis=-1).sum() > 50
    assert restart.sum() == NUM_SEEDS * (NUM_STEPS // 10)
    assert done.sum() == NUM_SEEDS * (NUM_STEPS // 100)


def _histogram(cells: jax.Array) -> np.ndarray:
    """`[9]` counts of `[N, 2]` cells of the 3x3 grid."""
    cells = np.asarray(cells)
    return np.bincount(cells[:, 0] * 3 + cells[:, 1], minlength=9)


def _assert_uniform(counts: np.ndarray, what: str) -> None:
    n = counts.sum()
    # 20 % of the expected count is about 5 standard deviations at n = 4500.
    assert np.all(np.abs(counts - n / 9) < 0.2 * n / 9), f"{what} not uniform: {counts}"


def test_reset_and_respawn_uniform_over_all_cells():
    N = 4500
    env, params = marljax.make("social/coin_game_jaxmarl-v0")
    ref = jaxmarl.make("coin_game")
    keys = jax.random.split(jax.random.key(3), N)

    ours = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)[0]
    theirs = jax.jit(jax.vmap(ref.reset))(keys)[1]
    for i in range(2):
        _assert_uniform(_histogram(ours.agent_pos[:, i]), f"marljax agent {i} at reset")
        _assert_uniform(_histogram(ours.coin_pos[:, i]), f"marljax coin {i} at reset")
    for what in ("red_pos", "blue_pos", "red_coin_pos", "blue_coin_pos"):
        _assert_uniform(_histogram(getattr(theirs, what)), f"jaxmarl {what} at reset")

    # Agent 0 (red) steps right onto its own coin at (0, 1); the coin respawns anywhere.
    _, s = ref.reset(jax.random.key(0))
    s = s.replace(
        red_pos=jnp.array([0, 0]),
        blue_pos=jnp.array([2, 2]),
        red_coin_pos=jnp.array([0, 1]),
        blue_coin_pos=jnp.array([1, 1]),
    )
    right, stay = 0, 4
    theirs = jax.jit(jax.vmap(lambda k: ref.step_env(k, s, {"0": right, "1": stay})[1]))(keys)
    state = _from_jaxmarl(s, 10)
    ours = jax.jit(jax.vmap(env.step, in_axes=(0, None, None, None)))(
        keys, state, jnp.array([right, stay]), params
    )[0]
    _assert_uniform(_histogram(theirs.red_coin_pos), "jaxmarl respawned coin")
    _assert_uniform(_histogram(ours.coin_pos[:, 0]), "marljax respawned coin")
    # The coin that was not picked up stays in both.
    assert (np.asarray(theirs.blue_coin_pos) == [1, 1]).all()
    assert (np.asarray(ours.coin_pos[:, 1]) == [1, 1]).all()
