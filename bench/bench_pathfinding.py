"""Lifelong multi-agent pathfinding: env steps per second, marljax vs POGEMA, and a parity check.

Task (equal settings in both frameworks): lifelong MAPF (POGEMA `on_target="restart"`,
`collision_system="soft"`), random obstacle maps of density 0.3, `obs_radius=5` (11x11 windows),
episodes of 128 steps, uniformly random actions; 8 agents on 16x16 and 64 agents on 32x32.

- marljax: `Pathfinding` in the training runner's stack (`BatchedAutoReset(EpisodeStats(env))`,
  as `marljax.training.train.make_train` builds it: one `lax.cond` per step on "did any env end?", so a
  reset, i.e. a fresh map drawn inside jit, is paid only on steps where an episode ended),
  vmapped over `E` = 1, 64, 1024, 4096 envs, `T` steps in one jitted `lax.scan`. Row
  `marljax`: every timed call starts `T // 2` steps before the time limit, so it crosses one
  episode boundary and pays for one batched reset (a worst case for `T < 128`; the natural rate
  is one per 128 steps). Row `marljax (no reset in call)` (when `T < 128`): the same compiled
  program started at step 0, so no episode ends inside the call. The table after the ratios
  derives the rate at the natural reset frequency from the two. Observations, global state,
  rewards and flags are folded into a checksum so nothing is optimised away.
- POGEMA 1.4 (`pogema_v0`, the standard wrapped env with its metrics wrappers): a Python loop over
  steps (and over `E` envs, POGEMA has no vectorised env), reset at episode end, at `E` = 1 and 64.
  POGEMA pins numpy 1.26, so it is not a dependency of marljax or of its `test`/`bench` extras: it
  runs in its own venv (`/work/venv-pogema`, or `$POGEMA_PYTHON`; create it with
  `python3 -m venv /work/venv-pogema && /work/venv-pogema/bin/pip install pogema==1.4.0`) as a
  subprocess of this script, timed inside that process.

The frameworks run interleaved (at each `E`, marljax then POGEMA), so slow drifts in the load of a
shared machine hit both alike; single numbers on a busy machine are still noisy. One env step =
one joint step of one env (all its agents).

    python bench/bench_pathfinding.py [--quick] [--json PATH]
    python bench/bench_pathfinding.py --parity   # step-by-step parity with POGEMA, no timing

`--parity` drives marljax and POGEMA with the same maps, starts, goals and actions under each of
POGEMA's three collision rules (`soft`, `priority`, `block_both`), see `parity`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from harness import Options, Result, SkipCase, Timing, case, main

from marljax.core.wrappers import BatchedAutoReset, EpisodeStats
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


def marljax_rollout(num_agents: int, num_envs: int, num_steps: int):
    """`(init(key, t0) -> env_state, run(env_state, key) -> (env_state, checksum))`.

    The runner's stack `BatchedAutoReset(EpisodeStats(env))`; `init` sets every env's step
    counter to `t0` (data, not static: one compiled `run` serves every start).
    """
    size = SETTINGS[num_agents]
    env = Pathfinding(size, size, num_agents, OBS_RADIUS, lifelong=True, map_type="random")
    params = env.default_params().replace(density=DENSITY, max_steps=MAX_STEPS)
    vec_env = BatchedAutoReset(EpisodeStats(env))

    def init(key, t0):
        state = vec_env.reset(jax.random.split(key, num_envs), params)[0]
        t = jnp.full((num_envs,), t0, jnp.int32)
        return state.replace(inner=state.inner.replace(t=t), episode_length=t)

    def run(env_state, key):
        def body(carry, key_t):
            state, acc = carry
            key_act, key_env = jax.random.split(key_t)
            actions = jax.random.randint(key_act, (num_envs, num_agents), 0, 5)
            keys = jax.random.split(key_env, num_envs)
            state, ts = vec_env.step(keys, state, actions, params)
            acc = (
                acc
                + jnp.sum(ts.obs)
                + jnp.sum(ts.global_state)
                + jnp.sum(ts.reward)
                + jnp.sum(ts.truncated)
                + jnp.sum(ts.extras["total_goals_reached"])
                + jnp.sum(ts.extras["episode_return"])
            )
            return (state, acc), None

        (env_state, acc), _ = jax.lax.scan(
            body, (env_state, jnp.float32(0)), jax.random.split(key, num_steps)
        )
        return env_state, acc

    return init, run


def timed_starts(run, states: dict[str, object], key, repeats: int) -> dict[str, Timing]:
    """Compile `run` once, then time it from each of `states`, interleaved repeat by repeat."""
    jax.clear_caches()
    first = next(iter(states.values()))
    t0 = time.perf_counter()
    lowered = jax.jit(run).lower(first, key)
    t1 = time.perf_counter()
    compiled = lowered.compile()
    t2 = time.perf_counter()
    warm, times, out = {}, {name: [] for name in states}, None
    for name, st in states.items():
        s = time.perf_counter()
        out = jax.block_until_ready(compiled(st, key))
        warm[name] = time.perf_counter() - s
    for _ in range(max(1, repeats)):
        for name, st in states.items():
            s = time.perf_counter()
            out = jax.block_until_ready(compiled(st, key))
            times[name].append(time.perf_counter() - s)
    return {
        name: Timing(t1 - t0, t2 - t1, warm[name], times[name], float("nan"), out)
        for name in states
    }


def _marljax_one(num_agents: int, num_envs: int, opts: Options) -> list[Result]:
    num_steps = _steps(num_envs, opts.quick)
    init, run = marljax_rollout(num_agents, num_envs, num_steps)
    init = jax.jit(init)
    key = jax.random.PRNGKey(0)
    states = {"marljax": init(key, max(0, MAX_STEPS - num_steps // 2))}
    if num_steps < MAX_STEPS:
        states["marljax (no reset in call)"] = init(key, 0)
    timings = timed_starts(run, states, jax.random.PRNGKey(1), opts.repeats)
    notes = {
        "marljax": {"T": num_steps, "includes": "one batched reset (fresh maps) per call"},
        "marljax (no reset in call)": {"T": num_steps, "includes": "no reset"},
    }
    return [
        t.result(_task(num_agents, num_envs), name, num_envs * num_steps, notes=notes[name])
        for name, t in timings.items()
    ]


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


def _pogema_one(num_agents: int, num_envs: int, opts: Options) -> Result:
    num_steps = 8 if opts.quick else (256 if num_envs == 1 else 8)
    cfg = dict(mode="speed", A=num_agents, size=SETTINGS[num_agents], density=DENSITY,
               r=OBS_RADIUS, max_steps=MAX_STEPS, E=num_envs, T=num_steps,
               repeats=opts.repeats)  # fmt: skip
    runs = run_pogema(cfg)["runs"]
    return Result(
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


def _interleaved(num_agents: int, opts: Options) -> list[Result]:
    """At each `E`: marljax, then POGEMA (at `E` = 1 and 64 only; skipped if not installed)."""
    out = []
    for num_envs in (1, 64) if opts.quick else NUM_ENVS:
        out.extend(_marljax_one(num_agents, num_envs, opts))
        if num_envs in (1, 64):
            try:
                out.append(_pogema_one(num_agents, num_envs, opts))
            except SkipCase as e:
                print(f"# pogema skipped: {e}", file=sys.stderr)
    return out


@case("pathfinding/A8")
def pathfinding_a8(opts: Options) -> list[Result]:
    return _interleaved(8, opts)


@case("pathfinding/A64")
def pathfinding_a64(opts: Options) -> list[Result]:
    return _interleaved(64, opts)


def vs_best_pogema(results: list[Result]) -> str:
    """marljax env-steps/s at every E over POGEMA's best measured env-steps/s (same A).

    `natural` is derived, not measured: the per-step time without resets plus the measured cost
    of one batched reset (`run(one reset) - run(no reset)`) spread over the 128 steps of an
    episode; where `T >= 128` the measured row already has the natural rate.
    """
    lines = [
        "",
        "| agents | E | T | marljax steps/s, one reset per call | no reset in call "
        "| natural rate (derived) | POGEMA best steps/s (E=1 or 64) | natural / POGEMA |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for num_agents in SETTINGS:
        tag = f"A={num_agents} "
        pog = [r.steps_per_s for r in results if r.framework == "pogema" and tag in r.task]
        best = max(pog) if pog else float("nan")
        rows = {}
        for r in results:
            if r.framework.startswith("marljax") and tag in r.task:
                rows.setdefault(r.task, {})[r.framework] = r
        for task, by in rows.items():
            main_row = by["marljax"]
            steps, e = main_row.env_steps, task.rsplit("E=", 1)[1]
            t_steps = main_row.notes["T"]
            nores = by.get("marljax (no reset in call)")
            if nores is None:
                natural, nores_rate = main_row.steps_per_s, float("nan")
            else:
                reset_s = max(main_row.run_s - nores.run_s, 0.0)
                per_call = nores.run_s + reset_s * t_steps / MAX_STEPS
                natural, nores_rate = steps / per_call, nores.steps_per_s
            lines.append(
                f"| {num_agents} | {e} | {t_steps} | {main_row.steps_per_s:,.0f} "
                f"| {nores_rate:,.0f} | {natural:,.0f} | {best:,.0f} | {natural / best:.2f}x |"
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
        ["pathfinding/A8", "pathfinding/A64"],
        __doc__.splitlines()[0],
        baseline="pogema",
        after=vs_best_pogema,
        repeats=3,
        first_call=False,
    )
