"""Env steps per second of the repeated Prisoner's Dilemma at 1, 64, 1024 and 4096 parallel envs.

marljax: `marljax.make("matrix/ipd-v0")` in the runner's stack (`BatchedAutoReset(EpisodeStats(env))`),
uniformly random actions, one jitted `lax.scan` over `T` steps of the vmapped step.
numpy: the same step written as plain vectorised NumPy (payoff lookup, egocentric last-action
observation, global state, termination/truncation, auto-reset, episode statistics), a Python
loop over `T` steps; the side-by-side reference point measured in the same run.

Every step's whole timestep (observations, global state, final observation, rewards, flags, mask,
episode statistics) is folded into a checksum in both implementations, so that the compiler cannot
drop work that a trainer would use. One env step = one joint step of one env.

    python bench/bench_matrix_env.py [--json PATH] [--quick]
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from harness import Options, Result, case, main, timed, timed_python

import marljax
from marljax.core.wrappers import BatchedAutoReset, EpisodeStats

ENV_ID = "matrix/ipd-v0"
NUM_ENVS = (1, 64, 1024, 4096)
NUM_STEPS = 1000


def _sizes(opts: Options) -> tuple[tuple[int, ...], int]:
    return ((1, 64), 50) if opts.quick else (NUM_ENVS, NUM_STEPS)


def _task(num_envs: int) -> str:
    return f"{ENV_ID} random actions, E={num_envs}"


def _checksum(xs) -> jax.Array:
    return sum(jnp.sum(x.astype(jnp.float32)) for x in xs)


# ----------------------------------------------------------------------------- marljax


def marljax_step_fn(env, params, num_envs: int):
    """`step(env_state [E], key, actions [E, A]) -> (env_state, checksum [])` of the training stack.

    The runner's stack: `BatchedAutoReset(EpisodeStats(env))` (resets only when an episode ends).
    """
    vec = BatchedAutoReset(EpisodeStats(env))

    def step(env_state, key, actions):
        env_state, ts = vec.step(jax.random.split(key, num_envs), env_state, actions, params)
        x = ts.extras
        return env_state, _checksum(
            (
                ts.obs,
                ts.reward,
                ts.terminated,
                ts.truncated,
                ts.action_mask,
                ts.global_state,
                x["final_obs"],
                x["final_global_state"],
                x["episode_return"],
                x["episode_length"],
            )
        )

    def reset(key):
        return vec.reset(jax.random.split(key, num_envs), params)

    return reset, step


def marljax_rollout_fn(env, params, num_envs: int, num_steps: int):
    """`rollout(env_state, key) -> (env_state, checksum)`: `num_steps` random joint actions."""
    _, step = marljax_step_fn(env, params, num_envs)
    shape = (num_envs, env.num_agents)

    def rollout(env_state, key):
        def body(carry, key_t):
            env_state, total = carry
            key_act, key_env = jax.random.split(key_t)
            actions = jax.random.randint(key_act, shape, 0, env.num_actions)
            env_state, c = step(env_state, key_env, actions)
            return (env_state, total + c), None

        (env_state, total), _ = jax.lax.scan(
            body, (env_state, jnp.float32(0)), jax.random.split(key, num_steps)
        )
        return env_state, total

    return rollout


@case("matrix_env/marljax")
def marljax_matrix_env(opts: Options) -> list[Result]:
    env, params = marljax.make(ENV_ID)
    sizes, T = _sizes(opts)
    results = []
    for E in sizes:
        reset, _ = marljax_step_fn(env, params, E)
        env_state, _ = jax.jit(reset)(jax.random.key(0))
        rollout = marljax_rollout_fn(env, params, E, T)
        t = timed(
            rollout, env_state, jax.random.key(1), repeats=opts.repeats, first_call=opts.first_call
        )
        results.append(t.result(_task(E), "marljax", E * T, notes={"num_envs": E, "num_steps": T}))
    return results


# ----------------------------------------------------------------------------- numpy


class NumpyRepeatedGame:
    """The repeated normal-form game + auto-reset + episode statistics, vectorised over `E` envs.

    Mirrors `MatrixGame` wrapped in `EpisodeStats(AutoReset(.))` for two or more agents.
    """

    def __init__(self, payoffs: np.ndarray, num_envs: int, num_rounds: int, max_steps: int):
        self.payoffs = np.asarray(payoffs, np.float32)
        self.A = self.payoffs.shape[0]
        self.N = self.payoffs.shape[1]
        self.E = num_envs
        self.num_rounds, self.max_steps = num_rounds, max_steps
        self.flat_payoffs = self.payoffs.reshape(self.A, -1)  # [A, N**A]
        self.strides = self.N ** np.arange(self.A - 1, -1, -1)
        a = np.arange(self.A)
        self.ego = (a[:, None] + a[None, :]) % self.A  # [A, A]
        self.mask = np.ones((num_envs, self.A, self.N), bool)

    def reset(self) -> dict:
        E, A = self.E, self.A
        return {
            "last_actions": np.full((E, A), -1, np.int64),
            "t": np.zeros(E, np.int64),
            "ep_ret": np.zeros((E, A), np.float32),
            "ep_len": np.zeros(E, np.int64),
            "last_ret": np.zeros((E, A), np.float32),
            "last_len": np.zeros(E, np.int64),
        }

    def _obs(self, last_actions: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        E, A, N = self.E, self.A, self.N
        onehot = (last_actions[..., None] == np.arange(N)).astype(np.float32)  # [E, A, N]
        first = (t == 0).astype(np.float32)  # [E]
        ego = onehot[:, self.ego].reshape(E, A, A * N)
        obs = np.concatenate([ego, np.broadcast_to(first[:, None, None], (E, A, 1))], axis=-1)
        frac = np.minimum(t / max(self.num_rounds, 1), 1.0).astype(np.float32)
        gs = np.concatenate([onehot.reshape(E, A * N), first[:, None], frac[:, None]], axis=-1)
        return obs, gs

    def step(self, s: dict, actions: np.ndarray) -> tuple[dict, float]:
        actions = np.clip(actions, 0, self.N - 1)
        reward = self.flat_payoffs[:, actions @ self.strides].T  # [E, A]
        t = s["t"] + 1
        terminated = t >= self.num_rounds
        truncated = (t >= self.max_steps) & ~terminated
        done = terminated | truncated
        final_obs, final_gs = self._obs(actions, t)
        # Auto-reset: the envs that ended start a new episode.
        last_actions = np.where(done[:, None], -1, actions)
        t = np.where(done, 0, t)
        obs, gs = self._obs(last_actions, t)
        ret = s["ep_ret"] + reward
        length = s["ep_len"] + 1
        new = {
            "last_actions": last_actions,
            "t": t,
            "ep_ret": np.where(done[:, None], 0.0, ret).astype(np.float32),
            "ep_len": np.where(done, 0, length),
            # EpisodeStats: the finished episode's totals at its last step, zeros otherwise.
            "last_ret": np.where(done[:, None], ret, 0.0).astype(np.float32),
            "last_len": np.where(done, length, 0),
        }
        checksum = sum(
            float(np.sum(x, dtype=np.float32))
            for x in (
                obs,
                reward,
                terminated,
                truncated,
                self.mask,
                gs,
                final_obs,
                final_gs,
                new["last_ret"],
                new["last_len"],
            )
        )
        return new, checksum


def numpy_rollout(game: NumpyRepeatedGame, state: dict, num_steps: int, seed: int):
    rng = np.random.default_rng(seed)
    total = 0.0
    for _ in range(num_steps):
        actions = rng.integers(0, game.N, (game.E, game.A))
        state, c = game.step(state, actions)
        total += c
    return state, total


def check_same_step(env, params, num_envs: int = 8, num_steps: int = 120) -> None:
    """The NumPy reference and marljax give the same checksum for the same actions."""
    actions = np.random.default_rng(0).integers(
        0, env.num_actions, (num_steps, num_envs, env.num_agents)
    )
    reset, step = marljax_step_fn(env, params, num_envs)
    state, _ = reset(jax.random.key(0))

    def body(s, xs):
        key, a = xs
        return step(s, key, a)

    _, sums = jax.jit(lambda s, k, a: jax.lax.scan(body, s, (jax.random.split(k, num_steps), a)))(
        state, jax.random.key(1), jnp.asarray(actions, jnp.int32)
    )
    game = NumpyRepeatedGame(
        np.asarray(params.payoffs), num_envs, int(params.num_rounds), int(params.max_steps)
    )
    s = game.reset()
    ref = []
    for a in actions:
        s, c = game.step(s, a)
        ref.append(c)
    np.testing.assert_allclose(np.asarray(sums), np.asarray(ref, np.float32), rtol=1e-5)


@case("matrix_env/numpy")
def numpy_matrix_env(opts: Options) -> list[Result]:
    env, params = marljax.make(ENV_ID)
    check_same_step(env, params)
    sizes, T = _sizes(opts)
    results = []
    for E in sizes:
        game = NumpyRepeatedGame(
            np.asarray(params.payoffs), E, int(params.num_rounds), int(params.max_steps)
        )
        state = game.reset()
        t = timed_python(numpy_rollout, game, state, T, 1, repeats=opts.repeats)
        results.append(t.result(_task(E), "numpy", E * T, notes={"num_envs": E, "num_steps": T}))
    return results


if __name__ == "__main__":
    main(
        ["matrix_env/marljax", "matrix_env/numpy"],
        description=__doc__.splitlines()[0],
        baseline="numpy",
    )
