"""Watch a policy: one episode, drawn frame by frame into an animated GIF (and an MP4).

    path = marljax.load_policy("runs/<run>").render()  # greedy: runs/<run>/episode_seed0.gif
    path = render_episode((env, env_params, policy), "episode.gif", max_steps=20)
    IPython.display.Image(filename=path)      # shows the GIF in a notebook

`record_episode` plays one episode as a jitted `lax.scan` of `marljax.training.rollout.step` (the acting
step of training and evaluation) in one environment that is never reset, and returns the env
states stacked along time; `frame_drawer(env)` returns the matplotlib function that draws one
state of `env`'s family; `render_episode` draws every state on the host and writes the frames
with matplotlib's `PillowWriter` (and `FFMpegWriter` when an `ffmpeg` executable is on PATH).
`marljax render RUN` is the command-line front end.

Families it draws (`DRAWABLE`): the grid worlds (level-based foraging, predator-prey,
pathfinding), the particle worlds (simple spread, simple tag, simple speaker-listener), the
social-dilemma grids (Coin Game, Harvest, Cleanup), the swarms, and JaxMARL's SMAX through the
adapter (`marljax.make("smax/3m-v0")`, `marljax.make("jaxmarl/HeuristicEnemySMAX")`). Mechanism
wrappers (punishment, reputation, ...) are drawn as the env they wrap.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from marljax.core.types import Environment, EnvParams, PRNGKey
from marljax.training import rollout

Array = jax.Array

#: `draw(ax, state, params)`: draws one state of the env (a single env, host arrays) on `ax`.
DrawFn = Callable[[Any, Any, EnvParams], None]

#: The env families `frame_drawer` can draw, as listed in its error message.
DRAWABLE = (
    "grid/lbf-*",
    "grid/predator_prey-*",
    "grid/mapf-*, grid/lmapf-* (pathfinding)",
    "particle/simple_spread-*, simple_tag-*, simple_speaker_listener-*",
    "social/coin_game-*, coin_game_jaxmarl-* and their punishment, reputation and third-party "
    "versions (not the partner-selection ones)",
    "social/harvest-*, social/cleanup-*",
    "swarm/*",
    "smax/*, jaxmarl/*SMAX* (JaxMARL's SMAX through marljax.envs.adapters.jaxmarl)",
)


class Episode(NamedTuple):
    """One recorded episode of one environment (host or device arrays).

    Attributes:
      states: the env's states before the first step and after each step (leaves `[T + 1, ...]`;
        the state of the env as given to `record_episode`, wrappers included).
      reward: `[T, A]` the rewards of each step.
      done: `[T]` bool, the step ended the episode; the steps after the first end are to be
        ignored (`length`).
    """

    states: Any  # leaves [T + 1, ...]
    reward: Array  # [T, A]
    done: Array  # [T] bool

    @property
    def length(self) -> int:
        """Steps up to and including the first end of the episode (all `T` if none ended)."""
        ends = np.flatnonzero(np.asarray(self.done))
        return int(ends[0]) + 1 if ends.size else int(np.shape(self.done)[0])


def record_episode(
    env: Environment,
    env_params: EnvParams,
    agent: Any,
    agent_state: Any,
    hparams: Any,
    key: PRNGKey,
    num_steps: int,
    greedy: bool = True,
) -> Episode:
    """Play `num_steps` steps of one environment with `agent` and keep every env state.

    One `lax.scan` of `marljax.training.rollout.step` in `rollout.batched_env(env, auto_reset=False)`,
    so the episode's final state is kept (steps after it continue from it; `Episode.length`
    says where the episode ended). Jitted; `env`, `agent`, `num_steps` and `greedy` are static.

    Args:
      env: the core environment (possibly wrapped, e.g. by a mechanism).
      env_params: its params.
      agent: a `marljax.agents.Agent` (only `act` and `initial_carry` are used).
      agent_state: the agent's state (one run, no seed axis).
      hparams: the agent's hyperparameters.
      key: PRNG key of the reset and the acting.
      num_steps: `T`, the step budget.
      greedy: act with the agent's deterministic policy (default) instead of sampling.

    Returns:
      An `Episode` with states `[T + 1, ...]`, reward `[T, A]` and done `[T]`.
    """
    return _record(env, env_params, agent, agent_state, hparams, key, num_steps, greedy)


@functools.partial(jax.jit, static_argnames=("env", "agent", "num_steps", "greedy"))
def _record(env, env_params, agent, agent_state, hparams, key, num_steps, greedy) -> Episode:
    vec_env = rollout.batched_env(env, auto_reset=False)
    key_reset, key_run = jax.random.split(key)
    state = rollout.reset(vec_env, env_params, key_reset, key_run, 1, agent.initial_carry(1))

    def body(s: rollout.RolloutState, _):
        s, transition = rollout.step(vec_env, env_params, agent, agent_state, hparams, s, greedy)
        return s, (s.env_state, transition.reward, transition.episode.done)

    _, (env_states, reward, done) = jax.lax.scan(body, state, None, length=num_steps)
    first = jax.tree.map(lambda x: x[None], state.env_state)
    states = jax.tree.map(lambda a, b: jnp.concatenate([a, b])[:, 0], first, env_states)
    states = states.inner  # drop the EpisodeStats wrapper: the state of `env`
    return Episode(states=states, reward=reward[:, 0], done=done[:, 0])


# ----------------------------------------------------------------------------- the API


def render_episode(
    source: Any,
    path: str | os.PathLike | None = None,
    seed: int = 0,
    max_steps: int | None = None,
    fps: float = 5,
    dpi: int = 80,
) -> Path:
    """Play one episode of a policy and write it as an animated GIF (and MP4 with ffmpeg).

    Args:
      source: a `marljax.shell.policy.Policy` (`marljax.load_policy(run_dir)`; for a run
        directory, `load_policy(run_dir).render(...)` calls this), or a tuple `(env,
        env_params, policy)` where `policy` is a `Policy` or any callable with `Policy`'s
        signature `policy(observation, carry, key) -> (actions [E, A, ...], carry)` (an
        `initial_carry(num_envs)` method is used when it has one).
      path: the GIF to write (default: `episode_seed<seed>.gif` in the run directory of a
        `Policy`, with a sweep's setting in the name; in the current directory
        for `(env, env_params, policy)`). An MP4 of the same name is written beside it when an
        `ffmpeg` executable is on PATH.
      seed: PRNG seed of the episode (its reset and any sampling).
      max_steps: step budget (default: the env params' `max_steps`); the animation stops at
        the end of the episode or after `max_steps` steps.
      fps: frames per second.
      dpi: resolution of the frames.

    Returns:
      The path of the GIF (`IPython.display.Image(filename=path)` shows it in a notebook).

    Raises:
      ValueError: an env family it cannot draw (listing those it can), bad `fps` /
        `max_steps`.
      TypeError: a run directory (load it with `marljax.load_policy` first) or another type.
    """
    if not fps > 0:
        raise ValueError(f"fps must be > 0, got {fps}")
    if max_steps is not None and max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    src = _resolve(source)
    draw = frame_drawer(src.env)  # an env it cannot draw fails before anything compiles
    num_steps = _budget(src.env_params) if max_steps is None else int(max_steps)
    episode = record_episode(src.env, src.env_params, src.agent, src.agent_state, src.hparams,
                             jax.random.PRNGKey(seed), num_steps, src.greedy)  # fmt: skip
    episode = jax.device_get(episode)
    if path is None:
        label = "".join(f"_{k}={v:g}" for k, v in src.setting.items())
        path = Path(src.run_dir or ".") / f"episode{label}_seed{seed}.gif"
    return write_animation(src.env, src.env_params, episode, path, fps=fps, dpi=dpi, draw=draw)


def write_animation(
    env: Environment,
    env_params: EnvParams,
    episode: Episode,
    path: str | os.PathLike,
    fps: float = 5,
    dpi: int = 80,
    draw: DrawFn | None = None,
) -> Path:
    """Draw the states of `episode` up to its end and write them as a GIF (MP4 with ffmpeg).

    Frame `k` shows the state after `k` steps (frame 0: the reset), titled with the step and the
    return so far (mean over agents, and per agent for up to 8 agents).

    Args:
      env, env_params: the env the episode was played in.
      episode: from `record_episode` (host arrays).
      path: the GIF to write; its parent folders are created.
      fps, dpi: frames per second and resolution.
      draw: the frame function (default `frame_drawer(env)`).

    Returns:
      The path of the GIF (`Episode.length + 1` frames); the MP4, if written, is beside it.
    """
    from matplotlib import animation
    from matplotlib.figure import Figure  # not pyplot: a notebook's backend stays as it is

    draw = frame_drawer(env) if draw is None else draw
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    length = episode.length
    returns = np.concatenate(
        [np.zeros((1, np.shape(episode.reward)[1])), np.cumsum(episode.reward[:length], axis=0)]
    )  # [length + 1, A]
    writers = [(animation.PillowWriter(fps=fps), path)]
    if shutil.which("ffmpeg"):
        writers.append((animation.FFMpegWriter(fps=fps), path.with_suffix(".mp4")))
    fig = Figure(figsize=(4.8, 5.0))
    ax = fig.subplots()
    with contextlib.ExitStack() as stack:
        for writer, out in writers:
            stack.enter_context(writer.saving(fig, str(out), dpi))
        for k in range(length + 1):
            ax.clear()
            draw(ax, jax.tree.map(lambda x, k=k: x[k], episode.states), env_params)
            ax.set_title(_title(env, k, length, returns[k]), fontsize=9)
            for writer, _ in writers:
                writer.grab_frame()
    return path


def _title(env: Environment, step: int, length: int, returns: np.ndarray) -> str:
    line = f"{env.name}  step {step}/{length}  return {np.mean(returns):.2f}"
    if 1 < returns.shape[0] <= 8:
        line += "\nper agent: " + " ".join(f"{r:.2f}" for r in returns)
    return line


def _budget(env_params: EnvParams) -> int:
    from marljax.training.train import TrainConfig, eval_budget

    try:
        return eval_budget(TrainConfig(), env_params)
    except ValueError:
        raise ValueError(
            f"{type(env_params).__name__} has no max_steps: give max_steps (--max-steps)"
        ) from None


class _CallableAgent(NamedTuple):
    """A policy callable as the two functions of an `Agent` that acting uses."""

    act: Callable
    initial_carry: Callable


class _Source(NamedTuple):
    """What `render_episode` plays: an env and an agent with its state."""

    env: Environment
    env_params: EnvParams
    agent: Any
    agent_state: Any
    hparams: Any
    greedy: bool
    setting: dict  # a sweep's setting (named in the default file name)
    run_dir: str | None  # where the GIF goes by default


def _resolve(source: Any) -> _Source:
    """The `_Source` of a `Policy` (or any object with its fields) or `(env, env_params, policy)`."""
    if isinstance(source, (str, os.PathLike)):
        raise TypeError(
            f"render_episode takes a policy, not a run directory ({str(source)!r}): use "
            "`marljax.load_policy(run_dir, setting=...).render(...)` or `marljax render RUN`."
        )
    if _is_policy(source):
        return _Source(source.env, source.env_params, source.agent, source.agent_state,
                       source.hparams, source.greedy, dict(getattr(source, "setting", {})),
                       getattr(source, "run_dir", None))  # fmt: skip
    if not (isinstance(source, tuple) and len(source) == 3):
        raise TypeError(
            "render_episode takes a Policy (`marljax.load_policy`) or (env, env_params, policy); "
            f"got {type(source).__name__}"
        )
    env, env_params, policy = source
    if _is_policy(policy):
        return _Source(env, env_params, policy.agent, policy.agent_state, policy.hparams,
                       policy.greedy, {}, None)  # fmt: skip
    if not callable(policy):
        raise TypeError(f"policy must be a Policy or a callable, got {type(policy).__name__}")
    try:
        agent = _callable_agent(policy)
    except TypeError:  # an unhashable callable: not cached, compiled on each call
        agent = _callable_agent.__wrapped__(policy)
    return _Source(env, env_params, agent, (), (), False, {}, None)


_POLICY_FIELDS = ("env", "env_params", "agent", "agent_state", "hparams", "greedy")


def _is_policy(x: Any) -> bool:
    """A `marljax.shell.policy.Policy`, or anything with its fields (this layer sits below it)."""
    return all(hasattr(x, f) for f in _POLICY_FIELDS)


@functools.lru_cache(maxsize=16)
def _callable_agent(policy: Callable) -> _CallableAgent:
    """The same agent for the same callable, so `record_episode` compiles once for it."""

    def act(agent_state, carry, observation, key, hparams, greedy=False):
        actions, carry = policy(observation, carry, key)
        return actions, carry, ()

    initial_carry = getattr(policy, "initial_carry", None) or (lambda num_envs: ())
    return _CallableAgent(act=act, initial_carry=initial_carry)


# ----------------------------------------------------------------------------- drawing


def frame_drawer(env: Environment) -> DrawFn:
    """The function that draws one state of `env`: `draw(ax, state, params)`.

    `state` is a state of `env` itself (one environment, no batch axis; wrapper states are
    looked through), `params` its params, `ax` a matplotlib `Axes`. Grid worlds are drawn as
    cells (row 0 at the top) with numbered agents; particle worlds, swarms and SMAX as circles
    in their arena.

    Args:
      env: the environment (possibly wrapped).

    Returns:
      The draw function of `env`'s family.

    Raises:
      ValueError: `env` is of no family it can draw; the message lists those it can
        (`DRAWABLE`).
    """
    core = env.unwrapped
    for kind, draw in _families():
        if isinstance(core, kind) and (kind.__name__ != "JaxMARLEnv" or _smax(core) is not None):
            return functools.partial(draw, core)
    raise ValueError(
        f"cannot draw {env.name}: marljax render draws these env families: " + "; ".join(DRAWABLE)
    )


def _families() -> list[tuple[type, Callable]]:
    """`(env class, draw(env, ax, state, params))` of every family, most specific first."""
    from marljax.envs.adapters.jaxmarl import JaxMARLEnv
    from marljax.envs.grid.lbf import LevelBasedForaging
    from marljax.envs.grid.pathfinding import Pathfinding
    from marljax.envs.grid.predator_prey import PredatorPrey
    from marljax.envs.particle.simple_speaker_listener import SimpleSpeakerListener
    from marljax.envs.particle.simple_tag import SimpleTag
    from marljax.envs.particle.world import ParticleEnv
    from marljax.envs.social.coin_game import CoinGame
    from marljax.envs.social.coin_game_jaxmarl import CoinGameJaxMARL
    from marljax.envs.social.dilemma_grid import DilemmaGrid
    from marljax.envs.swarm.base import SwarmEnv

    return [
        (LevelBasedForaging, _draw_lbf),
        (PredatorPrey, _draw_predator_prey),
        (Pathfinding, _draw_pathfinding),
        (SimpleTag, _draw_simple_tag),
        (SimpleSpeakerListener, _draw_speaker_listener),
        (ParticleEnv, _draw_particles),
        (CoinGame, _draw_coin_game),
        (CoinGameJaxMARL, _draw_coin_game),
        (DilemmaGrid, _draw_dilemma_grid),
        (SwarmEnv, _draw_swarm),
        (JaxMARLEnv, _draw_smax),
    ]


def _find(state: Any, field: str) -> Any:
    """The state (this one, or one nested as `.inner` / `.state`) that has `field`."""
    todo = [state]
    while todo:
        s = todo.pop(0)
        if hasattr(s, field):
            return s
        todo += [getattr(s, name) for name in ("inner", "state") if hasattr(s, name)]
    raise ValueError(f"{type(state).__name__} has no `{field}` field (nor does a state inside it)")


def _colour(i: int) -> Any:
    import matplotlib

    return matplotlib.colormaps["tab10"](i % 10)


_EMPTY, _WALL, _WATER, _APPLE, _WASTE, _BEAM, _FOOD = (
    (0.97, 0.97, 0.95),
    (0.35, 0.35, 0.35),
    (0.55, 0.75, 0.95),
    (0.35, 0.75, 0.3),
    (0.55, 0.4, 0.2),
    (1.0, 0.9, 0.4),
    (0.2, 0.6, 0.2),
)


def _grid(ax: Any, height: int, width: int, layers: tuple = ()) -> None:
    """Cells of an `[H, W]` grid (row 0 at the top), coloured by `(mask, rgb)` layers in order."""
    image = np.broadcast_to(np.asarray(_EMPTY), (height, width, 3)).copy()
    for mask, rgb in layers:
        image[np.asarray(mask, bool)] = rgb
    ax.imshow(image, origin="upper", extent=(-0.5, width - 0.5, height - 0.5, -0.5))
    ax.hlines(np.arange(-0.5, height), -0.5, width - 0.5, color="0.8", linewidth=0.5)
    ax.vlines(np.arange(-0.5, width), -0.5, height - 0.5, color="0.8", linewidth=0.5)
    ax.tick_params(length=0, labelbottom=False, labelleft=False)
    ax.set_xlim(-0.5, width - 0.5)
    ax.set_ylim(height - 0.5, -0.5)
    ax.set_aspect("equal")


def _agents(ax: Any, positions: Any, labels: Any = None, visible: Any = None, r=0.36) -> None:
    """Numbered agents at `[A, 2]` (row, col) cells, in their colours (side by side, smaller,
    where several share a cell)."""
    from matplotlib.patches import Circle

    positions = np.asarray(positions)
    visible = np.ones(len(positions), bool) if visible is None else np.asarray(visible)
    cells = [tuple(p) for p, v in zip(positions.tolist(), visible) if v]
    seen: dict[tuple, int] = {}
    for i, (row, col) in enumerate(positions):
        if not visible[i]:
            continue
        k, n = seen.get((row, col), 0), cells.count((row, col))
        seen[(row, col)] = k + 1
        if n > 1:  # spread on a small circle inside the cell
            angle = 2 * np.pi * k / n
            row, col = row - 0.22 * np.cos(angle), col + 0.22 * np.sin(angle)
        size = r if n == 1 else r * 0.6
        ax.add_patch(Circle((col, row), size, facecolor=_colour(i), edgecolor="k", lw=0.8,
                            zorder=3))  # fmt: skip
        text = str(i if labels is None else labels[i])
        ax.text(col, row, text, ha="center", va="center", fontsize=8, color="w", zorder=4)


def _draw_lbf(env: Any, ax: Any, state: Any, params: EnvParams) -> None:
    from matplotlib.patches import Rectangle

    s = _find(state, "food_pos")
    _grid(ax, env.height, env.width)
    for (row, col), level, alive in zip(s.food_pos, s.food_level, s.food_alive):
        if alive:
            ax.add_patch(Rectangle((col - 0.4, row - 0.4), 0.8, 0.8, color=_FOOD, zorder=2))
            ax.text(col, row, str(int(level)), ha="center", va="center", fontsize=8, color="w")
    _agents(ax, s.agent_pos, labels=[f"{i}:{int(v)}" for i, v in enumerate(s.agent_level)])


def _draw_predator_prey(env: Any, ax: Any, state: Any, params: EnvParams) -> None:
    from matplotlib.patches import RegularPolygon

    s = _find(state, "prey_pos")
    _grid(ax, env.height, env.width)
    for (row, col), alive in zip(s.prey_pos, s.prey_alive):
        if alive:
            ax.add_patch(RegularPolygon((col, row), 3, radius=0.38, color="crimson", zorder=2))
    _agents(ax, s.pred_pos, visible=s.pred_active)


def _draw_pathfinding(env: Any, ax: Any, state: Any, params: EnvParams) -> None:
    from matplotlib.patches import Rectangle

    s = _find(state, "goals")
    _grid(ax, env.height, env.width, [(s.obstacles, _WALL)])
    for i, ((row, col), active) in enumerate(zip(s.goals, s.active)):
        if active:
            ax.add_patch(Rectangle((col - 0.4, row - 0.4), 0.8, 0.8, fill=False,
                                   edgecolor=_colour(i), lw=2, zorder=2))  # fmt: skip
    _agents(ax, s.positions, visible=s.active)


def _draw_coin_game(env: Any, ax: Any, state: Any, params: EnvParams) -> None:
    from matplotlib.patches import Circle

    s = _find(state, "coin_pos")
    _grid(ax, env.grid_size, env.grid_size)
    _agents(ax, s.agent_pos)
    coins = np.asarray(s.coin_pos).reshape(-1, 2)  # [1, 2] (Coin Game) or [A, 2] (JaxMARL's)
    owners = [int(s.coin_owner)] if hasattr(s, "coin_owner") else range(len(coins))
    for (row, col), owner in zip(coins, owners):
        coin = Circle((col + 0.22, row + 0.22), 0.17, facecolor=_colour(owner), edgecolor="k",
                      lw=1.5, zorder=5)  # fmt: skip
        ax.add_patch(coin)


def _draw_dilemma_grid(env: Any, ax: Any, state: Any, params: EnvParams) -> None:
    from matplotlib.patches import Polygon

    s = _find(state, "apples")
    height, width = env.grid_shape
    water = np.zeros((height, width), bool)
    for name in ("river", "stream"):  # Cleanup's water cells
        if getattr(params, name, None) is not None:
            water |= np.asarray(getattr(params, name), bool)
    layers = [(params.walls, _WALL), (water, _WATER), (s.waste, _WASTE), (s.apples, _APPLE),
              (s.beams, _BEAM)]  # fmt: skip
    _grid(ax, height, width, layers)
    on_map = np.asarray(s.timeout) == 0
    _agents(ax, s.pos, visible=on_map, r=0.3)
    heading = np.array([[-1, 0], [0, 1], [1, 0], [0, -1]], np.float64)  # north, east, south, west
    for i, ((row, col), orient) in enumerate(zip(np.asarray(s.pos), np.asarray(s.orient))):
        if on_map[i]:  # a small triangle in front of the agent: where it faces
            dr, dc = heading[int(orient)]
            tip = (col + 0.48 * dc, row + 0.48 * dr)
            base = [(col + 0.3 * dc + 0.15 * dr, row + 0.3 * dr - 0.15 * dc),
                    (col + 0.3 * dc - 0.15 * dr, row + 0.3 * dr + 0.15 * dc)]  # fmt: skip
            ax.add_patch(Polygon([tip, *base], color=_colour(i), zorder=4))


def _arena(ax: Any, low: float, high: float) -> None:
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_aspect("equal")
    ax.tick_params(length=0, labelbottom=False, labelleft=False)


def _circles(ax: Any, centres: Any, radii: Any, colours: list, labels: Any = None, **kw) -> None:
    from matplotlib.patches import Circle

    radii = np.broadcast_to(np.asarray(radii, np.float64), (len(centres),))
    for i, ((x, y), r) in enumerate(zip(np.asarray(centres), radii)):
        ax.add_patch(Circle((x, y), r, facecolor=colours[i], **kw))
        if labels is not None:
            ax.text(x, y, str(labels[i]), ha="center", va="center", fontsize=7, zorder=4)


def _particle_arena(ax: Any, s: Any) -> None:
    """A square view of at least [-1.5, 1.5]^2 that holds every entity."""
    extent = max(1.5, float(np.max(np.abs(np.concatenate([s.agent_pos, s.landmark_pos])))) + 0.3)
    _arena(ax, -extent, extent)


def _draw_particles(env: Any, ax: Any, state: Any, params: EnvParams) -> None:
    s = _find(state, "landmark_pos")
    _particle_arena(ax, s)
    size = getattr(params, "landmark_size", 0.05)
    _circles(ax, s.landmark_pos, size, ["0.3"] * len(s.landmark_pos), zorder=2)
    agents = [_colour(i) for i in range(len(s.agent_pos))]
    size = getattr(params, "agent_size", 0.15)
    _circles(ax, s.agent_pos, size, agents, labels=range(len(agents)), alpha=0.8, zorder=3)


def _draw_simple_tag(env: Any, ax: Any, state: Any, params: EnvParams) -> None:
    s = _find(state, "landmark_pos")
    _particle_arena(ax, s)
    _circles(ax, s.landmark_pos, params.obstacle_size, ["0.35"] * len(s.landmark_pos), zorder=2)
    num_adv = env.num_adversaries
    sizes = np.where(np.arange(env.num_agents) < num_adv, params.adversary_size, params.good_size)
    colours = ["indianred" if i < num_adv else "mediumseagreen" for i in range(env.num_agents)]
    _circles(ax, s.agent_pos, sizes, colours, labels=range(env.num_agents), zorder=3)


def _draw_speaker_listener(env: Any, ax: Any, state: Any, params: EnvParams) -> None:
    from matplotlib.patches import Circle

    s = _find(state, "goal")
    _particle_arena(ax, s)
    colours = ["tab:red", "tab:green", "tab:blue"]
    _circles(ax, s.landmark_pos, params.landmark_size, colours, zorder=2)
    gx, gy = np.asarray(s.landmark_pos)[int(s.goal)]
    ax.add_patch(Circle((gx, gy), 3 * float(params.landmark_size), fill=False, lw=1.5, zorder=2))
    _circles(ax, s.agent_pos, params.agent_size, ["0.6", "0.25"], labels=["S", "L"], zorder=3)
    message = " ".join(f"{c:.1f}" for c in np.asarray(s.comm))
    ax.text(0.02, 0.02, f"goal {int(s.goal)}  message [{message}]", transform=ax.transAxes,
            fontsize=7)  # fmt: skip


def _draw_swarm(env: Any, ax: Any, state: Any, params: EnvParams) -> None:
    from marljax.evaluation.plots import swarm_snapshot

    pos, heading = swarm_snapshot(state)
    size = float(params.size)
    _arena(ax, 0.0, size)
    colours = [_colour(0)] * len(pos)
    _circles(ax, pos, 0.015 * size, colours, zorder=3)
    if heading is not None:
        length = 0.05 * size
        ax.quiver(pos[:, 0], pos[:, 1], np.cos(heading) * length, np.sin(heading) * length,
                  angles="xy", scale_units="xy", scale=1, width=0.004, zorder=4)  # fmt: skip


def _smax(env: Any) -> Any:
    """The SMAX env inside a JaxMARL adapter (through JaxMARL's wrappers), or None."""
    inner = getattr(env, "jaxmarl_env", None)
    while inner is not None and not hasattr(inner, "unit_type_health"):
        inner = getattr(inner, "_env", None)
    return inner


def _draw_smax(env: Any, ax: Any, state: Any, params: EnvParams) -> None:
    smax = _smax(env)
    s = _find(state, "unit_positions")
    alive = np.asarray(s.unit_alive, bool)
    types = np.asarray(s.unit_types)
    health = np.asarray(s.unit_health) / np.asarray(smax.unit_type_health)[types]
    radius = 1.5 * np.asarray(smax.unit_type_radiuses)[types]  # enlarged to be seen on the map
    team = np.arange(len(types)) < smax.num_allies  # allies first
    _arena(ax, 0.0, float(max(smax.map_width, smax.map_height)))
    for i, (x, y) in enumerate(np.asarray(s.unit_positions)):
        colour = "tab:blue" if team[i] else "tab:red"
        if not alive[i]:
            ax.plot([x], [y], marker="x", color=colour, alpha=0.5, ms=5)
            continue
        size = radius[i] * (0.4 + 0.6 * np.sqrt(np.clip(health[i], 0.0, 1.0)))
        _circles(ax, [(x, y)], size, [colour], alpha=0.85, zorder=3)
    ax.text(0.02, 0.02, "blue: allies (agents), red: enemies; size: health",
            transform=ax.transAxes, fontsize=7)  # fmt: skip


__all__ = [
    "DRAWABLE",
    "Episode",
    "frame_drawer",
    "record_episode",
    "render_episode",
    "write_animation",
]
