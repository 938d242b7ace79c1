"""`marljax render` / `render_episode`: one episode of a policy drawn into an animated GIF."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image

import marljax
from marljax.evaluation.render import frame_drawer, record_episode, render_episode
from marljax.shell.cli import main
from marljax.shell.experiment import Experiment, run_experiment

#: the title (step, returns) changes every frame; the arena is below it
TITLE_ROWS = 60


def random_policy(observation, carry, key):
    """Uniform over the legal actions (`Policy`'s signature)."""
    logits = jnp.where(observation.action_mask, 0.0, -jnp.inf)
    return jax.random.categorical(key, logits), carry


def frames(path) -> list[np.ndarray]:
    with Image.open(path) as gif:
        out = []
        for k in range(gif.n_frames):
            gif.seek(k)
            out.append(np.asarray(gif.convert("RGB")))
        return out


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A tiny IPPO run on level-based foraging with episodes of 4 steps (one update)."""
    out = tmp_path_factory.mktemp("runs")
    exp = Experiment(
        algo="ippo",
        env="grid/lbf-v0",
        env_kwargs={"max_steps": 4},
        seeds=1,
        out_dir=str(out),
        name="lbf",
        train={"num_envs": 2, "rollout_len": 2, "total_env_steps": 4, "eval_interval": 0},
        agent={"hidden_sizes": (8,), "num_minibatches": 1, "num_epochs": 1},
    )
    run_experiment(exp, progress=False)
    return str(out / "lbf")


def test_render_of_a_run_writes_one_frame_per_step_into_the_run_dir(run_dir):
    with pytest.raises(TypeError, match="load_policy"):  # the layer below the run directory
        render_episode(run_dir)
    path = marljax.load_policy(run_dir).render()
    assert str(path) == os.path.join(run_dir, "episode_seed0.gif")
    assert len(frames(path)) == 4 + 1  # the reset and the 4 steps of the episode


def test_marljax_render_cli(run_dir, tmp_path, capsys):
    out = tmp_path / "sub" / "two.gif"
    assert main(["render", run_dir, "--max-steps", "2", "--fps", "8", "--out", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    assert len(frames(out)) == 2 + 1  # cut by the step budget
    assert main(["render", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "not a run directory" in err and "Traceback" not in err, err
    assert main(["render", run_dir, "--fps", "0"]) == 2
    assert "fps must be > 0" in capsys.readouterr().err
    assert main(["render", run_dir, "--setting", "3"]) == 2
    assert "setting 3 is not in" in capsys.readouterr().err


def test_a_policy_callable_stops_at_the_episode_end_and_writes_an_mp4(tmp_path, monkeypatch):
    """Agents that move draw different frames; with `ffmpeg` on PATH (here a stand-in that
    stores what matplotlib pipes to it) an MP4 is written beside the GIF."""
    fake = tmp_path / "bin" / "ffmpeg"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nfor a in "$@"; do out="$a"; done\ncat > "$out"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    env, params = marljax.make("particle/simple_spread-v0", max_steps=3)
    path = render_episode((env, params, random_policy), tmp_path / "spread.gif", max_steps=6)
    gif = frames(path)
    assert len(gif) == 3 + 1  # the episode is truncated after 3 steps, before the budget
    assert not np.array_equal(gif[0][TITLE_ROWS:], gif[1][TITLE_ROWS:])
    assert os.path.getsize(tmp_path / "spread.mp4") > 0


def test_recorded_states_start_at_the_reset_and_the_episode_ends_with_the_env(run_dir):
    policy = marljax.load_policy(run_dir)
    key = jax.random.PRNGKey(3)
    episode = record_episode(policy.env, policy.env_params, policy.agent, policy.agent_state,
                             policy.hparams, key, 6)  # fmt: skip
    A = policy.env.num_agents
    assert episode.states.agent_pos.shape == (6 + 1, A, 2) and episode.reward.shape == (6, A)
    assert episode.length == 4  # the env's max_steps, inside the budget of 6
    key_reset = jax.random.split(jax.random.split(key)[0], 1)[
        0
    ]  # as marljax.training.rollout.reset
    state, _ = policy.env.reset(key_reset, policy.env_params)
    np.testing.assert_array_equal(episode.states.food_pos[0], state.food_pos)


def _draw(env, state, params) -> np.ndarray:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3, 3), dpi=50)
    frame_drawer(env)(fig.subplots(), jax.device_get(state), params)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()


FAMILIES = [
    "grid/predator_prey-v0",
    "grid/mapf-v0",
    "particle/simple_tag-v0",
    "particle/simple_speaker_listener-v0",
    "social/coin_game-v0",
    "social/coin_game_punishment-v0",
    "social/cleanup_small-v0",
    "swarm/vicsek-v0",
    "jaxmarl/HeuristicEnemySMAX",
]


@pytest.mark.parametrize("env_id", FAMILIES)
def test_every_family_draws_its_state(env_id):
    """Two reset states (different keys) draw differently; one state draws the same twice."""
    if env_id.startswith("jaxmarl/"):
        pytest.importorskip("jaxmarl")
    env, params = marljax.make(env_id)
    if env_id.startswith("jaxmarl/"):  # SMAX resets to fixed positions: step once to move
        state, _ = jax.jit(env.reset)(jax.random.PRNGKey(0), params)
        moved, _ = jax.jit(env.step)(jax.random.PRNGKey(1), state,
                                     jnp.full((env.num_agents,), 1), params)  # fmt: skip
    else:
        reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
        states, _ = reset(jax.random.split(jax.random.PRNGKey(0), 2), params)
        state, moved = (jax.tree.map(lambda x, i=i: x[i], states) for i in range(2))
    first = _draw(env, state, params)
    assert first.std() > 0  # not a blank picture
    np.testing.assert_array_equal(first, _draw(env, state, params))
    assert not np.array_equal(first, _draw(env, moved, params))


def test_an_env_it_cannot_draw_names_the_families_it_can():
    env, params = marljax.make("matrix/penalty_k0-v0")
    with pytest.raises(ValueError, match="cannot draw .*grid/lbf-.*particle/simple_spread"):
        frame_drawer(env)
    with pytest.raises(ValueError, match="cannot draw"):  # before anything compiles
        render_episode((env, params, random_policy), "never.gif")
    assert not os.path.exists("never.gif")
