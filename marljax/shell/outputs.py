"""The outputs of a run directory: metrics.npz, marl-eval metrics.json, learning_curve.png.

Written by `marljax.shell.experiment.run_experiment` after every chunk (metrics) and at the end
(the plot); `marljax.evaluation.results` reads and draws them.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import numpy as np

from marljax.core.registry import env_references
from marljax.evaluation import plots, results, stats
from marljax.shell.build import Built
from marljax.training.rollout import score_label, task_metric_names


def setting_labels(built: Built) -> list[str]:
    """`"name=value,..."` of every setting of a built experiment (`""` without a sweep; `"draw
    g"` in a tuning sweep, whose draws differ per seed: `marljax.shell.tune`)."""
    if built.exp.tune:
        return [f"draw {g}" for g in range(len(built.settings))]
    return [",".join(f"{k}={v:g}" for k, v in s.items()) for s in built.settings]


def write_metrics(run_dir: str, built: Built, metrics: dict[str, np.ndarray]) -> None:
    """metrics.npz (`[G, S, U]`, atomically) and marl-eval metrics.json of a run directory."""
    exp = built.exp
    tmp = os.path.join(run_dir, "metrics.tmp.npz")
    try:
        np.savez(tmp, **metrics)
        os.replace(tmp, os.path.join(run_dir, "metrics.npz"))
    except BaseException:  # e.g. no space: the previous metrics.npz stays, no partial file
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    S = metrics["episode_return"].shape[1]
    data: dict[str, Any] = {}
    for g, label in enumerate(setting_labels(built)):
        # marl-eval refuses commas in algorithm names: settings are separated by spaces
        algo = exp.algo if not label else f"{exp.algo}[{label.replace(',', ' ')}]"
        per = {k: v[g] for k, v in metrics.items() if v.ndim == 3}
        names = (
            "episode_return",
            *(["eval/episode_return"] if "eval/episode_return" in per else []),
            *task_metric_names(per),
        )
        seeds = [f"seed_{exp.seed + s}" for s in range(S)]
        out = results.to_marl_eval(per, exp.env, algo, seeds, metric_names=names)
        for env_name, tasks in out.items():
            for task, algos in tasks.items():
                data.setdefault(env_name, {}).setdefault(task, {}).update(algos)
    results.write_json(os.path.join(run_dir, "metrics.json"), data)


def write_plot(run_dir: str, built: Built, metrics: dict[str, np.ndarray]) -> None:
    """learning_curve.png: the return over seeds per setting, and a panel per task score."""
    exp = built.exp
    try:
        plots.plot_setting_curves(
            metrics["env_steps"][0, 0],
            metrics["episode_return"],
            setting_labels(built),
            os.path.join(run_dir, "learning_curve.png"),
            title=f"{exp.algo} on {exp.env} ({exp.seeds} seeds)",
            references=env_references(exp.env, exp.env_kwargs),
            scores={
                score_label(m): metrics[m]
                for m in task_metric_names(metrics)
                if not m.startswith("eval/")
            },
        )
    except ImportError:  # matplotlib is an optional extra
        pass


def write_league(run_dir: str, built: Built, league_state: Any, num_envs: int = 32) -> None:
    """league.json and league_crossplay.png of a finished league run: every run's snapshots
    played against each other (`league_crossplay`, one program), Elo, Nash and alpha-rank
    (`league_report`; two populations: the Nash of their bimatrix game, `pair_report`); the
    figure is the first run's matrix, snapshots ordered by age."""
    import jax

    from marljax.agents.base import Agent
    from marljax.population.league import league_teams
    from marljax.population.league_eval import league_crossplay, league_report, pair_report
    from marljax.shell.build import league_learners
    from marljax.training.train import eval_budget

    exp, env, params = built.exp, built.env, built.env_params
    learner = league_learners(exp, env, params)
    two = not isinstance(learner, Agent)  # a pair: one learner per team
    teams = league_teams(env, exp.league_config.teams, same_size=not two)
    steps = eval_budget(exp.train, params)
    out = league_crossplay(learner, league_state, env, params, jax.random.PRNGKey(0), teams,
                           num_envs=num_envs, num_steps=steps)  # fmt: skip
    win = np.asarray(out["win_rate"])  # [G, S, K, K]
    if two:
        rows, cols = (s.age for s in league_state.sides)
        report = jax.vmap(jax.vmap(pair_report))(win, *(s.filled for s in league_state.sides))
        about = (f"population 0's snapshots (team 0, {list(teams[0])}) against population 1's "
                 f"(team 1, {list(teams[1])}): win_rate[i][j] and return[i][j] (team 0's, "
                 f"summed over its agents) of snapshot i against j, {2 * num_envs} episodes per "
                 "pair, draws 1/2; age, age_1: the update each snapshot was taken (-1: empty)")  # fmt: skip
        extra = {"age_1": np.asarray(cols).tolist(), "return": np.asarray(out["return"]).tolist()}
    else:
        rows = cols = league_state.age
        report = jax.vmap(jax.vmap(league_report))(win, league_state.filled)
        about = (f"each run's snapshots (slots of the pool) against each other: win_rate[i][j] is "
                 f"snapshot i (team 0) against snapshot j (team 1), {num_envs} episodes per pair, "
                 "draws 1/2; age: the update each snapshot was taken (-1: empty)")  # fmt: skip
        extra = {}
    data = {
        "about": about,
        "age": np.asarray(rows).tolist(),
        **extra,
        "win_rate": win.tolist(),
        "finished": np.asarray(out["finished"]).tolist(),
        **{k: np.asarray(v).tolist() for k, v in report.items()},
    }
    if exp.league_config.exploit_updates:
        data.update(_league_exploitability(run_dir, built, league_state, learner, teams, win, two))
    results.write_json(os.path.join(run_dir, "league.json"), data)
    order, labels = [], []
    for ages in (np.asarray(rows)[0, 0], np.asarray(cols)[0, 0]):
        order.append(np.argsort(np.where(ages < 0, 2**31, ages)))
        labels.append([f"u{int(ages[k])}" for k in order[-1]])
    what = "team 0 (rows) against team 1" if two else "snapshots"
    with contextlib.suppress(ImportError):  # matplotlib is an optional extra
        plots.plot_crossplay_heatmap(
            win[0, 0][np.ix_(order[0], order[1])], os.path.join(run_dir, "league_crossplay.png"),
            labels=labels[0], col_labels=labels[1],
            title=f"{exp.algo} league: {what} (update taken)",
            value_label="win rate of the row snapshot",
        )  # fmt: skip


def _league_exploitability(run_dir: str, built: Built, league_state: Any, learner: Any,
                           teams: tuple, win: np.ndarray, two: bool) -> dict[str, Any]:  # fmt: skip
    """Approximate exploitability of every run's generations (`exploitability_curve`, one
    program per population): a fresh learner trained `league.exploit_updates` updates against
    each generation's newest snapshot and its Nash mixture. Drawn as
    `league_exploitability.png` (mean over the runs and their range); returned for league.json
    as `{"exploitability[_p]": {"latest": [G, S, K], "nash": [G, S, K]}}`, the responder's win
    rate minus 1/2."""
    import jax
    import jax.numpy as jnp

    from marljax.population.league_eval import exploitability_curve, generation_targets
    from marljax.training.train import TrainConfig

    exp = built.exp
    t = exp.train
    br = TrainConfig(num_envs=t.num_envs, rollout_len=t.rollout_len,
                     total_env_steps=t.num_envs * t.rollout_len * exp.league_config.exploit_updates)  # fmt: skip
    runs = win.shape[:2]
    flat = lambda x: jnp.reshape(x, (-1, *jnp.shape(x)[2:]))  # noqa: E731  [G, S, ...] -> [R, ...]
    out, curves = {}, {}
    for p in (0, 1) if two else (None,):
        if two:
            ages = [np.asarray(s.age) for s in league_state.sides]
            targets = jax.vmap(lambda w, a, b: generation_targets(w, a, age_1=b))(
                flat(win), flat(ages[0]), flat(ages[1])
            )
            latest, nash = targets[f"latest_{p}"], targets[f"nash_{p}"]
            pool = jax.tree.map(flat, league_state.sides[p].pool)
            kwargs = dict(opponent=learner[p], side=1 - p)
            agent = learner[1 - p]
        else:
            targets = jax.vmap(generation_targets)(flat(win), flat(league_state.age))
            latest, nash = targets["latest"], targets["nash"]
            pool = jax.tree.map(flat, league_state.pool)
            kwargs, agent = {}, learner
        K = latest.shape[-1]
        c = exploitability_curve(
            agent,
            built.env,
            built.env_params,
            pool,
            jnp.concatenate([latest, nash], axis=1),
            br,
            jax.random.PRNGKey(1),
            hparams=exp.base_hparams,
            teams=teams,
            **kwargs,
        )[:, 0]  # fmt: skip  [R, 2K]
        c = np.asarray(c).reshape(*runs, 2 * K)
        name = "exploitability" if p is None else f"exploitability_{p}"
        out[name] = {"latest": c[..., :K].tolist(), "nash": c[..., K:].tolist()}
        for kind, x in (("newest snapshot", c[..., :K]), ("Nash mixture", c[..., K:])):
            x = x.reshape(-1, K)
            label = kind if p is None else f"population {p}, {kind}"
            curves[label] = stats.Interval(x.mean(0), x.min(0), x.max(0))
    with contextlib.suppress(ImportError):  # matplotlib is an optional extra
        plots.plot_sample_efficiency(
            curves, np.arange(K), os.path.join(run_dir, "league_exploitability.png"),
            ylabel="best response's win rate - 1/2", xlabel="generation",
            title=f"{exp.algo} league: exploitability (mean, runs' range)",
        )  # fmt: skip
    return out


def export_marl_eval(run_dirs: list[str], out_dir: str, points: int = 20) -> list[str]:
    """One marl-eval JSON per run directory in `out_dir`, every run on the same step grid.

    For merging with marl-eval's `concatenate_json_files` (which reads every `*.json` under a
    folder, so `out_dir` must be new or empty and holds only these files) and comparing runs
    whose logging schedules differ: each metric is cut into `points` windows of the run's
    updates (`marljax.evaluation.results.aligned_marl_eval`). Metrics: `return` (training
    episodes), `eval_return` (greedy evaluations, when the run has them) and the task's scores
    (e.g. `win_rate`); one algorithm per setting, `algo` or `algo[lr=0.001 ent_coef=0.01]`.

    Returns:
      The files written.

    Raises:
      ValueError: `out_dir` exists and is not empty, or a run cannot be read (named).
    """
    if points < 2:
        raise ValueError(f"points must be >= 2, got {points}")
    if os.path.exists(out_dir) and (not os.path.isdir(out_dir) or os.listdir(out_dir)):
        raise ValueError(
            f"{out_dir} exists and is not an empty folder: marl-eval reads every .json under "
            "it, so the export needs a folder of its own (choose a new --to)"
        )
    runs = [plots.load_run(d) for d in run_dirs]
    entries = []  # (file name, env, algorithm, seeds, metrics)
    for run in runs:
        with np.load(run.run_dir / "metrics.npz") as m:
            evals = {k: np.asarray(m[k], np.float64) for k in m.files if k.startswith("eval/")}
        exp = run.config.get("experiment", {})
        seeds = [f"seed_{int(exp.get('seed', 0)) + s}" for s in range(run.returns.shape[1])]
        for g, label in enumerate(run.labels):
            metrics = {"return": run.returns[g]}
            metrics.update({score_label(k).replace(" ", "_"): v[g] for k, v in run.scores.items()})
            for k, v in evals.items():
                if k != "eval/episode_return" and not k.startswith("eval/task/"):
                    continue
                v = v[g].reshape(*v.shape[1:3], -1).mean(-1)  # per-agent values: their mean
                if np.isfinite(v).any(axis=-1).all():  # an evaluation in every seed
                    metrics[
                        "eval_" + (k.removeprefix("eval/task/") if "task/" in k else "return")
                    ] = v
            entries.append((run, label.replace(",", " "), seeds, metrics))
    # marl-eval reads the same metrics from every run: only those all runs have
    shared = set.intersection(*(set(e[3]) for e in entries))
    dropped = sorted(set().union(*(set(e[3]) for e in entries)) - shared)
    if dropped:
        print(f"marljax: note: not every run has {dropped}: exported without them")
    files: dict[str, dict] = {}
    names = {}
    for run, algo, seeds, metrics in entries:
        kept = {k: v for k, v in metrics.items() if k in shared}
        out = results.aligned_marl_eval(kept, run.env_steps, run.env, algo, seeds, points)
        if run.run_dir not in names:
            name = run.run_dir.name
            while name in files:
                name += "_"
            names[run.run_dir], files[name] = name, {}
        data = files[names[run.run_dir]]
        for env_name, tasks in out.items():
            for task, algos in tasks.items():
                data.setdefault(env_name, {}).setdefault(task, {}).update(algos)
    written: list[str] = []
    os.makedirs(out_dir, exist_ok=True)
    for name, data in files.items():
        path = os.path.join(out_dir, f"{name}.json")
        results.write_json(path, data)
        written.append(path)
    return written


__all__ = ["export_marl_eval", "setting_labels", "write_metrics", "write_plot"]


def write_tune_events(run_dir: str, events: list[dict], summary: dict | None = None) -> None:
    """tune.json: the tuner's events (its state after each step, `marljax.training.tune`), and
    at the end its `summary`; written before each checkpoint, so a resume reads it back."""
    data = {"events": events, **(summary or {})}
    results.write_json(os.path.join(run_dir, "tune.json"), data)


def read_tune_events(run_dir: str) -> list[dict]:
    """The events of a run directory's tune.json (empty when it stopped before the first).

    Raises:
      ValueError: a tune.json that cannot be read (the run cannot be resumed exactly).
    """
    import json

    path = os.path.join(run_dir, "tune.json")
    if not os.path.exists(path):
        return []
    try:
        with open(path) as f:
            return list(json.load(f)["events"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"Cannot resume {run_dir}: tune.json cannot be read ({err})") from None
