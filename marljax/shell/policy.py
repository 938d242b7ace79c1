"""Trained policies from run directories: load one, evaluate a run, cross-play two runs.

    policy = marljax.load_policy("runs/ippo_matrix_climbing-v0_...")   # best setting, first seed
    env, env_params = policy.env, policy.env_params
    carry = policy.initial_carry(num_envs)
    actions, carry = jax.jit(policy)(timestep, carry, key)   # TimeStep leaves [E, ...] -> [E, A]

    report = evaluate_run("runs/...", episodes=32)          # every seed, greedy: IQM and 95% CI
    table = crossplay_runs("runs/a", "runs/b")               # [seeds of a, seeds of b]

A run directory holds everything needed: `config.json` rebuilds the env, agent and trainer
(nothing is compiled), the newest checkpoint gives the trained state. `marljax eval RUN_DIR`
is the command-line front end. With the default key, `evaluate_run` repeats the run's own
final in-program evaluation (`TrainConfig.eval_interval`) bit for bit.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from marljax.core import config as cfg
from marljax.evaluation.plots import FEW_SEEDS
from marljax.evaluation.social import SocialMetrics
from marljax.shell import rundir
from marljax.training.rollout import score_label, task_metric_names
from marljax.training.train import EVAL_STREAM, eval_budget, make_evaluate


@dataclasses.dataclass(frozen=True, eq=False)
class Policy:
    """A trained policy: `policy(timestep, carry, key) -> (actions, carry)`, jittable.

    `timestep` is a batch of `E` environments' `TimeStep`s (leaves `[E, ...]`, e.g. a
    `vmap`ped `env.reset` / `env.step`) or a `marljax.agents.base.Observation`; `carry` starts
    as `initial_carry(E)`; actions are `[E, A, ...]`. For recurrent policies, pass an
    `Observation` whose `reset` is True where an episode starts (a `TimeStep` counts as
    mid-episode; a fresh `initial_carry` is already the start of one).

    Attributes:
      env, env_params: the environment it was trained on (`marljax.make` of the run's env).
      agent: the `marljax.agents.Agent`; `agent_state`: its trained state (one run).
      hparams: the run's hyperparameters; `setting`: the swept values of its setting.
      seed: the run's seed; `step`: the checkpoint (updates done); `run_dir`.
      greedy: act deterministically (the policy's mode, argmax Q); False samples.
    """

    env: Any
    env_params: Any
    agent: Any
    agent_state: Any
    hparams: Any
    setting: dict
    seed: int
    step: int
    run_dir: str
    greedy: bool = True

    def __call__(self, timestep: Any, carry: Any, key: jax.Array) -> tuple[jax.Array, Any]:
        from marljax.agents.base import Observation

        obs = timestep
        if not isinstance(timestep, Observation):
            num_envs = jnp.shape(timestep.obs)[0]
            obs = Observation(timestep.obs, timestep.action_mask, timestep.global_state,
                              jnp.zeros(num_envs, bool))  # fmt: skip
        kwargs = {"greedy": True} if self.greedy else {}
        actions, carry, _ = self.agent.act(
            self.agent_state, carry, obs, key, self.hparams, **kwargs
        )
        return actions, carry

    def initial_carry(self, num_envs: int) -> Any:
        """The recurrent carry of `num_envs` environments at the start of their episodes."""
        return self.agent.initial_carry(num_envs)

    def render(
        self,
        path: Any = None,
        seed: int = 0,
        max_steps: int | None = None,
        fps: float = 5,
        dpi: int = 80,
    ) -> Any:
        """One greedy episode as a GIF (and MP4 with ffmpeg) in the run directory: its path
        (`marljax.evaluation.render.render_episode(self, ...)`; `marljax render RUN`)."""
        from marljax.evaluation.render import render_episode

        return render_episode(self, path, seed=seed, max_steps=max_steps, fps=fps, dpi=dpi)


@dataclasses.dataclass
class _Run:
    """A run directory read back: its build, the restored states `[G, S, ...]`, the step."""

    run_dir: str
    built: Any
    states: Any
    step: int

    @property
    def exp(self) -> Any:
        return self.built.exp


def _read(run_dir: str | os.PathLike, step: int | None = None) -> _Run:
    from marljax.shell import experiment as xp
    from marljax.training import execute as ex
    from marljax.training.checkpoint import Checkpointer

    run_dir = os.path.abspath(os.fspath(run_dir))
    path = os.path.join(run_dir, "config.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{run_dir} is not a run directory (no config.json)")
    saved = json.loads(open(path).read())  # noqa: SIM115
    rundir.verify(run_dir, saved)  # a hand-edited config would act with the wrong network
    exp = (built := xp.build(xp.Experiment.from_dict(saved))).exp
    ckpt_dir = os.path.join(run_dir, "checkpoints")
    fix = "train it with checkpoints on (the default), or resume it: marljax train --resume RUN"
    if not os.path.isdir(ckpt_dir):
        raise FileNotFoundError(f"{run_dir} has no checkpoints/ folder: {fix}")
    G, S = len(built.settings), exp.seeds
    seeds = jnp.arange(exp.seed, exp.seed + S)
    keys = np.tile(np.asarray(jax.vmap(jax.random.PRNGKey)(seeds)), (G, 1))
    hparams = jax.tree.map(lambda x: np.repeat(np.asarray(x), S, axis=0), built.hparams)
    like = ex.state_like(built.trainer, keys, hparams, env_params=built.env_params)
    with Checkpointer(ckpt_dir, read_only=True) as ckpt:  # never cleans a writer's save
        steps = ckpt.all_steps()
        if not steps:
            raise FileNotFoundError(f"{run_dir} has no complete checkpoint: {fix}")
        if step is not None and step not in steps:
            raise ValueError(f"{run_dir} has no checkpoint {step}; it has {sorted(steps)}")
        # the asked checkpoint, or the newest that restores (a damaged one is skipped, a note)
        tries = [step] if step is not None else sorted(steps, reverse=True)
        for i, step in enumerate(tries):
            try:
                state = _restore(ckpt, like, step, exp.layout)
                break
            except ValueError as err:
                if i == len(tries) - 1:
                    raise
                print(f"marljax: note: {run_dir}: skipped {err}", file=sys.stderr)
    states = jax.tree.map(lambda x: x.reshape(G, S, *x.shape[1:]), state)
    return _Run(run_dir, built, states, int(step))


def _restore(ckpt: Any, like: Any, step: int, layout: str) -> Any:
    """Checkpoint `step` as host arrays of `like`'s shapes (one device's copy of an
    `envs`-layout run's learner)."""
    if layout == "envs":  # [R, D, ...]: every device holds the same learner
        raw = jax.tree.leaves(ckpt.restore_numpy(step))
        D = next(x.shape[1] for x in raw if np.ndim(x) >= 2)
        like = jax.tree.map(
            lambda x: jax.ShapeDtypeStruct((x.shape[0], D, *x.shape[1:]), x.dtype), like
        )
        return jax.tree.map(lambda x: np.asarray(x)[:, 0], ckpt.restore(like, step))
    return jax.tree.map(np.asarray, ckpt.restore(like, step))


def _setting_index(run: _Run, setting: Any) -> int:
    """The index of `setting` (None: the only one, or a sweep's best; an index; a dict or a
    `"lr=3e-4,ent_coef=0.01"` string matched to float tolerance)."""
    settings = run.built.settings
    listed = "; ".join(f"{g}: {_label(s)}" for g, s in enumerate(settings))
    if setting is None:
        if len(settings) == 1:
            return 0
        summary = os.path.join(run.run_dir, "sweep.json")
        if os.path.isfile(summary):
            with open(summary) as f:
                best = json.load(f).get("best")
            if best is None:
                raise ValueError(
                    f"no setting of {run.run_dir} trained without NaN/inf (sweep.json names no "
                    f"best); a diverged run has no policy to evaluate. Its settings: {listed}"
                )
            return int(best["index"])
        raise ValueError(
            f"{run.run_dir} has {len(settings)} settings and no sweep.json: choose one with "
            f"setting= (--setting): {listed}"
        )
    if isinstance(setting, (int, np.integer)) and not isinstance(setting, bool):
        if 0 <= setting < len(settings):
            return int(setting)
        raise ValueError(f"setting {setting} is not in {run.run_dir}; its settings: {listed}")
    wanted = dict(setting) if not isinstance(setting, str) else (
        cfg.parse_assignments(setting.split(","), "--setting"))  # fmt: skip
    for g, s in enumerate(settings):
        try:
            same = set(s) == set(wanted) and all(  # to float tolerance, or as printed (%g)
                math.isclose(a := float(s[k]), b := float(wanted[k]), rel_tol=1e-6)
                or f"{a:g}" == f"{b:g}" for k in s
            )  # fmt: skip
        except (TypeError, ValueError):
            same = False
        if same:
            return g
    raise ValueError(f"setting {setting!r} is not in {run.run_dir}; its settings: {listed}")


def _label(setting: dict) -> str:
    return ",".join(f"{k}={v:g}" for k, v in setting.items()) or "default"


def _check_finite(run: _Run, g: int, seeds: list[int]) -> None:
    """Refuse the runs of setting `g` whose parameters hold NaN/inf (`refuse_non_finite`)."""
    from marljax.shell.finite import refuse_non_finite

    labels = [_label(st) for st in run.built.settings]
    refuse_non_finite(run.states.agent_state, labels, g, seeds, run.exp.seed, run.run_dir)


def _seed_index(run: _Run, seed: int | None) -> int:
    exp = run.exp
    if seed is None:
        return 0
    if not exp.seed <= int(seed) < exp.seed + exp.seeds:
        raise ValueError(
            f"seed {seed} is not in {run.run_dir}; its seeds are {exp.seed}..."
            f"{exp.seed + exp.seeds - 1}"
        )
    return int(seed) - exp.seed


def load_policy(
    run_dir: str | os.PathLike,
    setting: Any = None,
    seed: int | None = None,
    step: int | None = None,
    greedy: bool = True,
) -> Policy:
    """The trained policy of one run of a run directory (`marljax train` or `marljax sweep`).

    Args:
      run_dir: the run directory.
      setting: which setting of a sweep: an index, a dict of the swept values, or a string
        such as `"lr=3e-4,ent_coef=0.01"`; default: the only one, or the sweep's best.
      seed: which seed (default: the first).
      step: which checkpoint (default: the newest).
      greedy: act deterministically (default) or sample from the policy.

    Raises:
      FileNotFoundError: not a run directory, or no checkpoint (with the fix).
      ValueError: a setting, seed or step that the run does not have (listing those it has).
    """
    run = _read(run_dir, step)
    g, s = _setting_index(run, setting), _seed_index(run, seed)
    _check_finite(run, g, [s])
    built = run.built
    return Policy(
        env=built.env,
        env_params=built.env_params,
        agent=built.agent,
        agent_state=jax.tree.map(lambda x: x[g, s], run.states.agent_state),
        hparams=jax.tree.map(lambda x: x[g], built.hparams),
        setting=dict(built.settings[g]),
        seed=run.exp.seed + s,
        step=run.step,
        run_dir=run.run_dir,
        greedy=greedy,
    )


@dataclasses.dataclass
class EvalReport:
    """Greedy evaluation of every seed of one setting (`evaluate_run`).

    Attributes:
      returns: `[S]` mean episode return (mean over agents) per seed; `per_agent`: `[S, A]`.
      num_episodes: `[S]` episodes that ended within the step budget.
      iqm, ci: interquartile mean over seeds and its 95% stratified-bootstrap interval.
      seeds, setting, env, episodes, step, run_dir: what was evaluated.
      scores: the task's own scores (e.g. SMAX's win rate), `{"task/<name>": {"per_seed": [S],
        "iqm": float, "ci": (low, high)}}`, and in social dilemmas (envs that label
        cooperation, punishment or tagging) the social metrics `"social/<name>"`
        (`marljax.evaluation.social.SocialMetrics`: cooperation and punishment rates,
        efficiency, equality, sustainability, peace); empty for a task without any.
    """

    returns: np.ndarray
    per_agent: np.ndarray
    num_episodes: np.ndarray
    iqm: float
    ci: tuple[float, float]
    seeds: list[int]
    setting: dict
    env: str
    episodes: int
    step: int
    run_dir: str
    scores: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "env": self.env,
            "setting": self.setting,
            "checkpoint": self.step,
            "episodes_per_seed": self.episodes,
            "iqm": self.iqm,
            "ci95": list(self.ci),
            "mean": float(np.mean(self.returns)),
            "per_seed": {f"seed_{s}": float(r) for s, r in zip(self.seeds, self.returns)},
            "per_agent": {f"seed_{s}": r.tolist() for s, r in zip(self.seeds, self.per_agent)},
            "num_episodes": {f"seed_{s}": int(n) for s, n in zip(self.seeds, self.num_episodes)},
            **{
                name.removeprefix("task/"): {
                    "iqm": v["iqm"],
                    "ci95": list(v["ci"]),
                    "mean": float(np.mean(v["per_seed"])),
                    "per_seed": {f"seed_{s}": float(x) for s, x in zip(self.seeds, v["per_seed"])},
                }
                for name, v in self.scores.items()
            },
        }

    def __str__(self) -> str:
        lines = [
            f"greedy evaluation of {self.run_dir} ({_label(self.setting)}, checkpoint "
            f"{self.step}) on {self.env}, {self.episodes} episodes per seed:"
        ]
        for i, (s, r, n) in enumerate(zip(self.seeds, self.returns, self.num_episodes)):
            extra = "".join(
                f", {score_label(k)} {v['per_seed'][i]:.3f}" for k, v in self.scores.items()
            )
            lines.append(f"  seed {s}: return {r:.3f}{extra} ({int(n)} episodes ended)")
        lines.append(
            f"  IQM over {len(self.seeds)} seeds: {self.iqm:.3f} "
            f"[95% CI {self.ci[0]:.3f}, {self.ci[1]:.3f}]; mean {np.mean(self.returns):.3f}"
        )
        for k, v in self.scores.items():
            lines.append(
                f"  {score_label(k)}: IQM {v['iqm']:.3f} [95% CI {v['ci'][0]:.3f}, "
                f"{v['ci'][1]:.3f}]; mean {np.mean(v['per_seed']):.3f}"
            )
        if len(self.seeds) < FEW_SEEDS:
            lines.append(
                f"  (under {FEW_SEEDS} seeds a bootstrap interval is about the seeds' range, "
                "not a reliable 95% CI)"
            )
        return "\n".join(lines)


def evaluate_run(
    run_dir: str | os.PathLike,
    episodes: int | None = None,
    env: str | None = None,
    setting: Any = None,
    step: int | None = None,
    max_steps: int | None = None,
    key: jax.Array | None = None,
    write: bool = True,
) -> EvalReport:
    """Evaluate the greedy policy of every seed of one setting, in one compiled program.

    Args:
      run_dir: the run directory.
      episodes: episodes per seed (default: the run's `train.eval_episodes`).
      env: evaluate on another registered env id with the same observation and action spaces
        (default: the run's env).
      setting, step: as `load_policy`.
      max_steps: step budget of one evaluation (default: as in training, the env's `max_steps`).
      key: PRNG key of the evaluation; default: each run's own evaluation key (with the
        default episodes and budget this repeats the run's final in-program evaluation).
      write: write `eval.json` (`eval_<env>.json` for another env) into the run directory.
    """
    from marljax.core.registry import make
    from marljax.evaluation import stats

    run = _read(run_dir, step)
    built, exp = run.built, run.exp
    g = _setting_index(run, setting)
    _check_finite(run, g, list(range(run.exp.seeds)))
    env_id = exp.env if env is None else env
    target, target_params = built.env, built.env_params
    if env is not None:
        target, target_params = make(env)
        _check_same_spaces(built.env, built.env_params, target, target_params, exp.env, env)
    train = built.trainer.config
    episodes = train.eval_episodes if episodes is None else int(episodes)
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    budget = eval_budget(dataclasses.replace(train, eval_steps=max_steps or 0), target_params)
    social = SocialMetrics(target)  # social dilemmas: cooperation, punishment, peace rates
    if social.has_cooperated or social.has_punished or social.has_tagged:
        target = social
    agent_states = jax.tree.map(lambda x: x[g], run.states.agent_state)  # [S, ...]
    hparams = jax.tree.map(lambda x: x[g], built.hparams)
    _check_eval_memory(target, built.agent, target_params, agent_states, hparams, episodes,
                       budget, exp.seeds)  # fmt: skip
    evaluate = make_evaluate(target, built.agent, episodes, budget)
    if key is None:
        keys = jax.vmap(lambda k: jax.random.fold_in(k, EVAL_STREAM))(run.states.key[g])
    else:
        keys = jax.random.split(key, exp.seeds)
    out = jax.jit(jax.vmap(evaluate, in_axes=(0, None, None, 0)))(
        agent_states, hparams, target_params, keys
    )
    returns = np.asarray(out["eval/episode_return"], np.float64)
    if not np.isfinite(returns).all():
        raise ValueError(
            f"no episode ended within {budget} steps for some seed; raise max_steps (--max-steps)"
        )

    def iqm_ci(values: np.ndarray) -> tuple[float, tuple[float, float]]:
        interval = stats.interval_estimate(
            jax.random.PRNGKey(0), stats.aggregate_iqm, values[:, None], num_resamples=2000
        )
        return float(interval.point), (float(interval.low), float(interval.high))

    iqm, ci = iqm_ci(returns)
    scores = {}
    social_names = sorted(n for n in out if n.startswith("eval/social/"))
    for name in task_metric_names(out) + social_names:  # "eval/task/<name>", "eval/social/..."
        per_seed = np.asarray(out[name], np.float64)
        point, interval = iqm_ci(per_seed)
        scores[name.removeprefix("eval/")] = {"per_seed": per_seed, "iqm": point, "ci": interval}
    report = EvalReport(
        returns=returns,
        per_agent=np.asarray(out["eval/episode_return_per_agent"], np.float64),
        num_episodes=np.asarray(out["eval/num_episodes"]),
        iqm=iqm,
        ci=ci,
        seeds=[exp.seed + s for s in range(exp.seeds)],
        setting=dict(built.settings[g]),
        env=env_id,
        episodes=episodes,
        step=run.step,
        run_dir=run.run_dir,
        scores=scores,
    )
    if write:
        from marljax.evaluation import results

        name = "eval.json" if env is None else f"eval_{env_id.replace('/', '_')}.json"
        rundir.refuse_links(run.run_dir)
        results.write_json(os.path.join(run.run_dir, name), report.to_dict())
    return report


def _check_eval_memory(env, agent, params, agent_states, hparams, episodes, steps, seeds,
                       available: int | None = None) -> None:  # fmt: skip
    """Refuse an evaluation whose env states and episode records would not fit in host memory
    (e.g. `--episodes 100000000`), before compiling."""
    from marljax.shell.build import refuse_over_memory
    from marljax.training.train import evaluate_bytes

    one = jax.tree.map(lambda x: x[0], agent_states)
    refuse_over_memory(
        2 * seeds * evaluate_bytes(env, agent, params, one, hparams, episodes, steps),
        f"evaluating {seeds} seeds x {episodes:,} episodes x {steps:,} steps needs",
        "use fewer --episodes or a smaller --max-steps",
        available,
    )


def _check_same_spaces(env_a, params_a, env_b, params_b, id_a: str, id_b: str) -> None:
    for what in ("observation_space", "action_space"):
        a, b = getattr(env_a, what)(params_a), getattr(env_b, what)(params_b)
        if repr(a) != repr(b) or env_a.num_agents != env_b.num_agents:
            raise ValueError(
                f"{id_b} does not fit a policy trained on {id_a}: its {what} is {b!r}, the "
                f"policy's {a!r} ({env_b.num_agents} vs {env_a.num_agents} agents)"
            )


__all__ = ["EvalReport", "Policy", "evaluate_run", "load_policy"]
