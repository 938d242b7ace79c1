"""Lifelong multi-agent pathfinding: env steps per second, marljax vs POGEMA, and a parity check.

Task (equal settings in both frameworks): lifelong MAPF (POGEMA `on_target="restart"`,
`collision_system="soft"`), random obstacle maps of density 0.3, `obs_radius=5` (11x11 windows),
episodes of 128 steps, uniformly random actions; 8 agents on 16x16 and 64 agents on 32x32.

- marljax: `Pathfinding` wrapped for training (`EpisodeStats(AutoReset(env))`, so every episode
  draws a fresh map inside jit), vmapped over `E` = 1, 64, 1024, 4096 envs, `T` steps in one
  jitted `lax.scan`; observations, global state, rewards and flags are folded into a checksum so
  nothing is optimised away. A second row times the bare `env.step` (no auto-reset): under
  `vmap`, `AutoReset`'s `lax.cond` computes a full reset (a new map) at every step.
- POGEMA 1.4 (`pogema_v0`, the standard wrapped env with its metrics wrappers): a Python loop over
  steps (and over `E` envs, POGEMA has no vectorised env), reset at episode end. POGEMA pins
  numpy 1.26, so it runs in its own venv (`/work/venv-pogema`, or `$POGEMA_PYTHON`) as a
  subprocess of this script, timed inside that process.

One env step = one joint step of one env (all its agents).

    python bench/bench_pathfinding.py [--quick] [--json PATH]
    python bench/bench_pathfinding.py --parity   # step-by-step parity with POGEMA, no timing
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
from harness import Options, Result, SkipCase, case, main, timed

from marljax.core.wrappers import wrap_for_training
from marljax.envs.grid import maps
from marljax.envs.grid.pathfinding import COLLISION_RULES, Pathfinding

SETTINGS = {8: 16, 64: 32}  # agents -> grid side
NUM_ENVS = (1, 64, 1024, 4096)
DENSITY, OBS_RADIUS, MAX_STEPS = 0.3, 5, 128
POGEMA_PYTHON = os.environ.get("POGEMA_PYTHON", "/work/venv-pogema/bin/python")


def _steps(num_envs: int, quick: bool) -> int:
    if quick:
        return 8
    return max(8, min(128, 16384 // num_envs))


def _task(num_agents: int, num_envs: int) -> str:
    size = SETTINGS[num_agents]
    return f"lifelong MAPF {size}x{size} d={DENSITY} A={num_agents} r={OBS_RADIUS}, E={num_envs}"


# ----------------------------------------------------------------------------- marljax


def marljax_rollout(num_agents: int, num_envs: int, num_steps: int, auto_reset: bool = True):
    """`run(key) -> checksum` of `num_steps` random-action steps of `num_envs` envs.

    With `auto_reset`, the training stack `EpisodeStats(AutoReset(env))`: under `vmap` its
    `lax.cond` becomes a select, so a full reset (a fresh map) is computed at every step. Without
    it, the bare `env.step` (episodes of `MAX_STEPS` are not reached within one call).
    """
    size = SETTINGS[num_agents]
    env = Pathfinding(size, size, num_agents, OBS_RADIUS, lifelong=True, map_type="random")
    params = env.default_params().replace(density=DENSITY, max_steps=MAX_STEPS)
    wrapped = wrap_for_training(env) if auto_reset else env
    reset = jax.vmap(wrapped.reset, in_axes=(0, None))
    step = jax.vmap(wrapped.step, in_axes=(0, 0, 0, None))

    def run(key):
        key_reset, key_run = jax.random.split(key)
        state, _ = reset(jax.random.split(key_reset, num_envs), params)

        def body(carry, key_t):
            state, acc = carry
            key_act, key_env = jax.random.split(key_t)
            actions = jax.random.randint(key_act, (num_envs, num_agents), 0, 5)
            state, ts = step(jax.random.split(key_env, num_envs), state, actions, params)
            acc = (
                acc
                + jnp.sum(ts.obs)
                + jnp.sum(ts.global_state)
                + jnp.sum(ts.reward)
                + jnp.sum(ts.truncated)
                + jnp.sum(ts.extras["total_goals_reached"])
            )
            return (state, acc), None

        (_, acc), _ = jax.lax.scan(
            body, (state, jnp.float32(0)), jax.random.split(key_run, num_steps)
        )
        return acc

    return run


def _marljax_case(num_agents: int, opts: Options) -> list[Result]:
    out = []
    envs = (1, 64) if opts.quick else NUM_ENVS
    for num_envs in envs:
        num_steps = _steps(num_envs, opts.quick)
        for auto_reset in (True, False):
            run = marljax_rollout(num_agents, num_envs, num_steps, auto_reset)
            t = timed(run, jax.random.PRNGKey(0), repeats=opts.repeats, first_call=opts.first_call)
            out.append(
                t.result(
                    _task(num_agents, num_envs),
                    "marljax" if auto_reset else "marljax (env.step only)",
                    num_envs * num_steps,
                    notes={"T": num_steps, "includes": "one vmapped reset per call"},
                )
            )
    return out


@case("pathfinding/marljax_A8")
def marljax_a8(opts: Options) -> list[Result]:
    return _marljax_case(8, opts)


@case("pathfinding/marljax_A64")
def marljax_a64(opts: Options) -> list[Result]:
    return _marljax_case(64, opts)


# ----------------------------------------------------------------------------- POGEMA

POGEMA_WORKER = r"""
import json, sys, time
import numpy as np
from pogema import GridConfig, pogema_v0

cfg = json.loads(sys.argv[1])


def speed(cfg):
    envs = [
        pogema_v0(GridConfig(num_agents=cfg["A"], size=cfg["size"], density=cfg["density"],
                             obs_radius=cfg["r"], max_episode_steps=cfg["max_steps"],
                             on_target="restart", collision_system="soft", seed=i))
        for i in range(cfg["E"])
    ]
    for env in envs:
        env.reset()
    rng = np.random.default_rng(0)
    times = []
    for rep in range(cfg["repeats"] + 1):
        t0 = time.perf_counter()
        acc = 0.0
        for _ in range(cfg["T"]):
            for env in envs:
                obs, rew, term, trunc, info = env.step(rng.integers(0, 5, cfg["A"]).tolist())
                acc += float(np.sum(obs)) + sum(rew)
                if all(term) or all(trunc):
                    env.reset()
        times.append(time.perf_counter() - t0)
    return {"first": times[0], "runs": times[1:]}


def parity(cfg):
    out = []
    for ep in cfg["episodes"]:
        kw = dict(map=ep["map"], agents_xy=ep["starts"], obs_radius=cfg["r"],
                  max_episode_steps=len(ep["actions"]) + 1, collision_system=ep["collision"],
                  num_agents=len(ep["starts"]))
        if ep["lifelong"]:
            kw.update(on_target="restart", targets_xy=ep["goal_sequences"])
        else:
            kw.update(on_target="finish", targets_xy=ep["goals"])
        env = pogema_v0(GridConfig(**kw))
        env.reset()
        traj = []
        for actions in ep["actions"]:
            obs, rew, term, trunc, info = env.step(list(actions))
            traj.append({"pos": [list(map(int, p)) for p in env.get_agents_xy(ignore_borders=True)],
                         "reward": [float(x) for x in rew],
                         "obs": [o.astype(int).tolist() for o in obs]})
        out.append(traj)
    return out


print(json.dumps(speed(cfg) if cfg["mode"] == "speed" else parity(cfg)))
"""


def run_pogema(cfg: dict) -> object:
    """Run the POGEMA worker in POGEMA's venv and return its JSON answer."""
    if not os.path.exists(POGEMA_PYTHON):
        raise SkipCase(
            f"{POGEMA_PYTHON} not found: python3 -m venv /work/venv-pogema && "
            "/work/venv-pogema/bin/pip install pogema (it pins numpy 1.26), or set $POGEMA_PYTHON"
        )
    proc = subprocess.run(
        [POGEMA_PYTHON, "-c", POGEMA_WORKER, json.dumps(cfg)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"POGEMA worker failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _pogema_case(num_agents: int, opts: Options) -> list[Result]:
    out = []
    for num_envs in (1, 64) if not opts.quick else (1,):
        num_steps = 8 if opts.quick else (256 if num_envs == 1 else 8)
        cfg = dict(mode="speed", A=num_agents, size=SETTINGS[num_agents], density=DENSITY,
                   r=OBS_RADIUS, max_steps=MAX_STEPS, E=num_envs, T=num_steps,
                   repeats=opts.repeats)  # fmt: skip
        ans = run_pogema(cfg)
        runs = ans["runs"]
        out.append(
            Result(
                task=_task(num_agents, num_envs),
                framework="pogema",
                compile_s=float("nan"),
                run_s=float(np.median(runs)),
                env_steps=num_envs * num_steps,
                run_min_s=min(runs),
                run_max_s=max(runs),
                repeats=len(runs),
                notes={"T": num_steps, "loop": "python over steps and envs"},
            )
        )
    return out


@case("pathfinding/pogema_A8")
def pogema_a8(opts: Options) -> list[Result]:
    return _pogema_case(8, opts)


@case("pathfinding/pogema_A64")
def pogema_a64(opts: Options) -> list[Result]:
    return _pogema_case(64, opts)


def vs_best_pogema(results: list[Result]) -> str:
    """marljax env-steps/s at every E over POGEMA's best measured env-steps/s (same A)."""
    lines = [
        "",
        "| agents | E | marljax variant | steps/s | POGEMA best steps/s (E=1 or 64, loop) | ratio |",
        "|---:|---:|---|---:|---:|---:|",
    ]
    for num_agents in SETTINGS:
        tag = f"A={num_agents} "
        pog = [r.steps_per_s for r in results if r.framework == "pogema" and tag in r.task]
        if not pog:
            continue
        best = max(pog)
        for r in results:
            if r.framework.startswith("marljax") and tag in r.task:
                e = r.task.rsplit("E=", 1)[1]
                ratio = r.steps_per_s / best
                lines.append(
                    f"| {num_agents} | {e} | {r.framework} | {r.steps_per_s:,.0f} | {best:,.0f} "
                    f"| {ratio:.2f}x |"
                )
    return "\n".join(lines)


# ----------------------------------------------------------------------------- parity


def _map_text(obstacles: np.ndarray) -> str:
    return "\n".join("".join("#" if o else "." for o in row) for row in obstacles)


def parity(num_episodes: int = 40, num_steps: int = 40, seed: int = 0) -> bool:
    """Drive marljax and POGEMA with the same maps, starts, goals and actions; compare each step.

    For each of POGEMA's collision rules (`soft`, `priority`, `block_both`): `num_episodes`
    episodes, half one-shot (`on_target="finish"`) and half lifelong with POGEMA goal sequences (on
    arrival marljax's new goal is overwritten with the sequence's next goal, since the random draw
    of new goals uses different generators). Positions, rewards and observations (obstacle, agent
    and target channels) are compared at every step. POGEMA runs in its own venv (it pins numpy
    1.26, so it is kept out of the project's `test` extra), see `run_pogema`.
    """
    rng = np.random.default_rng(seed)
    h = w = 8
    num_agents, r = 6, 3
    generate = jax.jit(lambda k: maps.generate(k, h, w, num_agents, jnp.float32(0.3)))
    all_ok = True
    for rule in COLLISION_RULES:
        episodes, states = [], []
        for e in range(num_episodes):
            lifelong = e % 2 == 1
            layout = jax.tree.map(np.asarray, generate(jax.random.PRNGKey(seed + e)))
            goal_seqs = [[layout.goals[a].tolist()] for a in range(num_agents)]
            for a in range(num_agents):
                free = np.argwhere(layout.labels == layout.labels[tuple(layout.goals[a])])
                goal_seqs[a] += free[rng.integers(0, len(free), num_steps)].tolist()
            actions = rng.integers(0, 5, (num_steps, num_agents)).tolist()
            episodes.append(
                dict(
                    map=_map_text(layout.obstacles),
                    starts=layout.starts.tolist(),
                    goals=layout.goals.tolist(),
                    goal_sequences=goal_seqs,
                    actions=actions,
                    lifelong=lifelong,
                    collision=rule,
                )  # fmt: skip
            )
            states.append(layout)
        ref = run_pogema(dict(mode="parity", r=r, episodes=episodes))
        ok, missing, moves = True, 0, 0
        envs = {
            ll: Pathfinding(h, w, num_agents, r, lifelong=ll, collision=rule)
            for ll in (False, True)
        }
        steps = {ll: jax.jit(envs[ll].step) for ll in (False, True)}
        for e, (ep, layout, traj) in enumerate(zip(episodes, states, ref, strict=True)):
            env, step = envs[ep["lifelong"]], steps[ep["lifelong"]]
            params = env.default_params().replace(max_steps=num_steps + 1)
            state, _ = env.init_state(layout.obstacles, layout.starts, layout.goals, params)
            goal_idx = [0] * num_agents
            for t, (acts, want) in enumerate(zip(ep["actions"], traj, strict=True)):
                before = np.asarray(state.positions)
                state, ts = step(jax.random.PRNGKey(t), state, jnp.asarray(acts), params)
                if ep["lifelong"]:
                    goals = np.asarray(state.goals).copy()
                    for a in np.flatnonzero(np.asarray(ts.reward) > 0):
                        goal_idx[a] += 1
                        seq = ep["goal_sequences"][a]
                        goals[a] = seq[goal_idx[a] % len(seq)]
                    state = state.replace(goals=jnp.asarray(goals, jnp.int32))
                    obs = np.asarray(env.observe(state))
                else:
                    obs = np.asarray(ts.obs)
                moves += int(np.any(np.asarray(state.positions) != before, axis=-1).sum())
                pos = np.asarray(state.positions).tolist()
                rew = np.asarray(ts.reward).tolist()
                bad = []
                if pos != want["pos"]:
                    bad.append(f"positions {pos} vs {want['pos']}")
                if rew != want["reward"]:
                    bad.append(f"rewards {rew} vs {want['reward']}")
                active = np.asarray(state.active)
                ref_obs = np.asarray(want["obs"])
                ours, theirs = obs[active], ref_obs[active].copy()
                # POGEMA's soft rule updates its agent-occupancy grid agent by agent
                # (`move_without_checks`), so an agent that moved into a cell vacated in the same
                # step by a higher-index agent is erased from the grid (a POGEMA quirk; dynamics
                # unaffected). Count those cells and patch them for the soft rule only.
                erased = (ours[:, 1] == 1) & (theirs[:, 1] == 0)
                missing += int(np.sum(erased))
                if rule == "soft":
                    theirs[:, 1] = np.maximum(theirs[:, 1], ours[:, 1])
                if not np.array_equal(ours, theirs):
                    diff = np.argwhere(ours != theirs)
                    bad.append(
                        f"observations differ at [agent, channel, row, col] {diff[:3].tolist()}"
                    )
                if bad:
                    print(f"{rule}: episode {e} ({'lifelong' if ep['lifelong'] else 'one-shot'}) "
                          f"step {t}: " + "; ".join(bad))  # fmt: skip
                    ok = False
                    break
        kinds = f"{num_episodes // 2} one-shot + {num_episodes - num_episodes // 2} lifelong"
        verdict = "IDENTICAL" if ok else "DIFFERENT"
        print(
            f"parity with POGEMA, collision_system={rule!r} ({kinds} episodes, {num_steps} "
            f"steps, {num_agents} agents, {h}x{w}, r={r}, {moves} agent moves): positions, "
            f"rewards and observations {verdict}; agent cells missing from POGEMA's occupancy "
            f"grid (its soft-rule move_without_checks quirk): {missing}"
        )
        all_ok &= ok
    return all_ok


if __name__ == "__main__":
    if "--parity" in sys.argv:
        sys.exit(0 if parity() else 1)
    main(
        [
            "pathfinding/marljax_A8",
            "pathfinding/pogema_A8",
            "pathfinding/marljax_A64",
            "pathfinding/pogema_A64",
        ],
        __doc__.splitlines()[0],
        baseline="pogema",
        after=vs_best_pogema,
        repeats=3,
        first_call=False,
    )
