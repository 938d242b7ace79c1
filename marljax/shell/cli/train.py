"""`marljax train`, `marljax sweep` and `marljax psro`: an `Experiment` from the arguments, run."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from marljax.core import config as cfg

#: the experiment keys whose values are mappings (checked before options are merged into them)
MAPPINGS = ("train", "agent", "hparams", "env_kwargs", "grid", "sample", "tune", "league")


def experiment_from_args(args: argparse.Namespace, base: dict | None = None):
    """Build an `Experiment` from parsed `train`/`sweep` arguments, once (validates everything).

    Args:
      args: parsed arguments.
      base: the experiment mapping the options apply to (default: `--config`'s file, else the
        defaults; with `--resume`, the run's own experiment).
    """
    from marljax.agents import algo_spec
    from marljax.shell.experiment import Experiment
    from marljax.training.train import TrainConfig

    if base is None:
        base = _read_experiment(args.config) if args.config else {}
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
    for key, kind, what in (("algo", str, "an algorithm name"), ("env", str, "an env id"),
                            *((k, dict, "a mapping of name: value") for k in MAPPINGS)):  # fmt: skip
        if data.get(key) is not None and not isinstance(data[key], kind):
            raise cfg.ConfigError(f"experiment.{key} must be {what}, got {data[key]!r}")
    for flag, key in (("algo", "algo"), ("env", "env"), ("preset", "preset"), ("seeds", "seeds"),
                      ("seed", "seed"), ("out", "out_dir"), ("name", "name"),
                      ("devices", "devices"), ("layout", "layout"), ("opponents", "opponents"),
                      ("num_samples", "num_samples"), ("sample_seed", "sample_seed"),
                      ("metric", "metric"), ("mode", "mode"), ("window", "window")):  # fmt: skip
        if getattr(args, flag, None) is not None:
            data[key] = getattr(args, flag)
    algo = data.get("algo", Experiment.algo)
    spec = algo_spec(algo)
    run_keys = {"seeds", "seed", "chunk_updates", "out_dir", "name", "checkpoint"}
    groups = {
        "run": run_keys,
        "train": set(cfg.field_names(TrainConfig)),
        "agent": set(cfg.field_names(spec.config_cls)),
        "hparams": set(cfg.field_names(spec.hparams_cls)),
    }
    sets = cfg.parse_assignments(args.set, "--set")
    for key in [k for k in sets if k.startswith("env.")]:
        value = sets.pop(key)
        if not key[4:]:
            raise cfg.ConfigError(f"--set expects env.KEY=VALUE, got {key}={value!r}")
        data["env_kwargs"] = {**(data.get("env_kwargs") or {}), key[4:]: _env_value(value)}
    for key in [k for k in sets if k.startswith("league.")]:
        data["league"] = {**(data.get("league") or {}), key[7:]: sets.pop(key)}
    if getattr(args, "league", None) is not None:
        data["league"] = {**(data.get("league") or {}), "rule": args.league}
    routed = cfg.route_assignments(
        sets, groups, f"--set (algo {algo})", ("env.<option>", "league.<option>")
    )
    data.update(routed.pop("run"))
    for group, values in routed.items():
        if values:
            data[group] = {**(data.get(group) or {}), **values}
    if args.steps is not None:
        data["train"] = {**(data.get("train") or {}), "total_env_steps": args.steps}
    grid = _assignments_once(args.grid, "--grid")
    if grid:
        data["grid"] = {k: [v for v in vals.split(",") if v.strip()] for k, vals in grid.items()}
    sample = _assignments_once(getattr(args, "sample", []), "--sample")
    if sample:
        data["sample"] = sample
    tune = _tune_from_args(args)
    if tune:
        data["tune"] = {**(data.get("tune") or {}), **tune}
    if getattr(args, "check_finite", None) is not None:
        data["check_finite"] = bool(args.check_finite)
    if getattr(args, "log", None):
        data["log"] = list(args.log)
    exp = Experiment.from_dict(data)
    _say_rounding(exp, args.steps)
    return exp


def _tune_from_args(args: argparse.Namespace) -> dict:
    """`--pbt N`, `--halving RUNGS` or `--tune-random`, with `--tune-set KEY=VALUE` options."""
    chosen = [
        (flag, value)
        for flag, value in (("pbt", getattr(args, "pbt", None)),
                            ("halving", getattr(args, "halving", None)),
                            ("random", getattr(args, "tune_random", None) or None))
        if value is not None
    ]  # fmt: skip
    extra = cfg.parse_assignments(getattr(args, "tune_set", None) or [], "--tune-set")
    if len(chosen) > 1:
        names = " and ".join("--tune-random" if f == "random" else f"--{f}" for f, _ in chosen)
        raise cfg.ConfigError(f"{names}: choose one way to tune")
    if not chosen:
        if extra:
            raise cfg.ConfigError("--tune-set needs --pbt, --halving or --tune-random")
        return {}
    method, value = chosen[0]
    out: dict = {"method": method}
    if method == "pbt":
        out["interval"] = value
    elif method == "halving":
        out["rungs"] = value
    out.update(extra)
    return out


def _assignments_once(items: list[str], flag: str) -> dict[str, str]:
    """`parse_assignments`, refusing a key given twice (e.g. `--grid lr=1 --grid lr=2`)."""
    seen = [cfg.parse_assignments([item], flag) for item in items or []]
    keys = [k for d in seen for k in d]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise cfg.ConfigError(
            f"{flag} {', '.join(repeated)} given more than once; list every value in one "
            f"{flag} (e.g. {flag} {repeated[0]}=V1,V2)"
        )
    return {k: v for d in seen for k, v in d.items()}


def _say_rounding(exp, steps: int | None) -> None:
    """`--steps` that is not a whole number of updates: say what it rounds to."""
    t = exp.train
    done = t.num_updates * t.steps_per_update
    if steps is not None and done != steps:
        print(
            f"marljax: --steps {steps:,} is not a whole number of updates of num_envs "
            f"{t.num_envs} x rollout_len {t.rollout_len} = {t.steps_per_update:,} steps: "
            f"training {t.num_updates} updates = {done:,} env steps",
            file=sys.stderr,
        )


def _read_experiment(path: str) -> dict:
    """The experiment mapping of a YAML/JSON file (an experiment or a run's config.json)."""
    try:
        data = cfg.loads(cfg.read_config_text(path, f"--config {path}"), path)
    except FileNotFoundError:
        raise FileNotFoundError(f"--config {path}: no such file") from None
    except IsADirectoryError:
        raise IsADirectoryError(
            f"--config {path} is a directory; give a YAML/JSON file (for a run: "
            f"{path.rstrip('/')}/config.json, or --resume {path})"
        ) from None
    from marljax.shell.spec import experiment_mapping

    run_config = "experiment" in data  # a run's config.json: its format version checked
    data = dict(experiment_mapping(data))
    data.pop("check_finite", None)  # a choice of each invocation, not of the run
    if run_config:  # reproducing a run makes a new run directory, not a clash with the old one
        data.pop("name", None)
    return data


def _env_value(raw: str) -> Any:
    """Env options: numbers, booleans, JSON lists (e.g. payoffs), or strings (e.g. coplayer)."""
    import json

    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def cmd_train(args: argparse.Namespace) -> int:
    import numpy as np

    from marljax.shell.experiment import build, final_returns, run_experiment

    if args.algo == "psro":
        return _train_psro(args)
    # With --resume, the options apply on top of the run's own configuration; any change of
    # the static configuration is then refused by `run_experiment`, naming the difference.
    base = _read_experiment(_config_path(args.resume)) if args.resume else None
    built = build(experiment_from_args(args, base))  # once; fails fast before printing anything
    if args.qtable:
        from marljax.agents.qlearning import QConfig

        if not isinstance(built.agent_config, QConfig) or built.agent_config.recurrent:
            raise cfg.ConfigError(
                "--qtable needs a value learner (iql, vdn, qmix) with feed-forward agents "
                "(--set recurrent=false)"
            )
    if args.allow_hparam_change and not args.resume:
        raise cfg.ConfigError("--allow-hparam-change goes with --resume RUN_DIR")
    result = run_experiment(
        built,
        resume=args.resume,
        progress=not args.no_progress,
        max_memory_bytes=_budget(args),
        allow_hparam_change=args.allow_hparam_change,
    )
    if args.qtable:
        _print_q_tables(built, result)
    print(f"run directory: {result.run_dir}")
    from marljax.training.rollout import score_label, task_metric_names

    episodes = built.trainer.config.eval_episodes
    summaries = [("episode_return", "final return (training episodes, exploring policy)")]
    if "eval/episode_return" in result.metrics:
        summaries.append(
            ("eval/episode_return", f"final greedy evaluation ({episodes} episodes per seed)")
        )
    for name in task_metric_names(result.metrics):  # e.g. SMAX's win rate
        summaries.append((name, f"final {score_label(name)}"))
    if "league/win_rate" in result.metrics:  # zero-sum returns average to 0: the outcome counts
        summaries.append(("league/win_rate", "final league win rate (team 0, draws 1/2; "
                          f"cross-play of the snapshots in {result.run_dir}/league.json)"))  # fmt: skip
    from marljax.core import env_references

    refs = env_references(built.exp.env, built.exp.env_kwargs)
    if refs:
        print("reference returns of " + built.exp.env + ": "
              + ", ".join(f"{name} {value:g}" for name, value in refs.items()))  # fmt: skip
    for metric, title in summaries:
        final = final_returns(result.metrics, metric)
        print(f"{title}:")
        for g, setting in enumerate(result.settings):
            label = ",".join(f"{k}={v:g}" for k, v in setting.items()) or "all seeds"
            vals = final[g]
            mean = f"{np.mean(vals):.3f}" if np.isfinite(vals).all() else "n/a (no episode ended)"
            print(f"  {label}: mean {mean} over {len(vals)} seeds  {np.round(vals, 3).tolist()}")
    return 0


def _budget(args: argparse.Namespace) -> int | None:
    from marljax.training.execute import parse_bytes

    return None if args.max_memory is None else parse_bytes(args.max_memory)


def _config_path(run_dir: str) -> str:
    import os

    path = os.path.join(run_dir, "config.json")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{run_dir} is not a run directory (no config.json)")
    return path


def _print_q_tables(built, result) -> None:
    """`--qtable`: the learned Q tables of seed 0 of every setting."""
    import jax

    from marljax.agents.qlearning import first_step_q_table, format_q_table

    exp = built.exp
    for g, setting in enumerate(result.settings):
        state = jax.tree.map(lambda x, g=g: x[g, 0], result.state.agent_state)
        label = ",".join(f"{k}={v:g}" for k, v in setting.items()) or exp.algo
        print(f"learned Q values ({label}, seed {exp.seed}):")
        print(
            format_q_table(
                first_step_q_table(built.agent_config, built.env, state, built.env_params)
            )
        )


def cmd_sweep(args: argparse.Namespace) -> int:
    from marljax.shell import sweep

    if args.distributed:
        from marljax.training.execute import initialize

        initialize()
    base = _read_experiment(_config_path(args.resume)) if args.resume else None
    exp = experiment_from_args(args, base)
    if exp.sample and exp.num_samples < 1:
        raise cfg.ConfigError("--sample needs --num-samples N (random draws) with N >= 1")
    if exp.tune:
        from marljax.shell.tune import run_tune

        run_tune(
            exp, max_memory_bytes=_budget(args), resume=args.resume, progress=not args.no_progress
        )
        return 0
    result = sweep.run_sweep(
        exp, max_memory_bytes=_budget(args), resume=args.resume, progress=not args.no_progress
    )
    if result.finite is not None and not result.finite[result.best_index].all():
        print(
            "marljax: error: no setting trained without NaN/inf in every seed; none is a result "
            "(see the ranking above and sweep.json's non_finite_seeds)",
            file=sys.stderr,
        )
        return 1
    tied = [g for g in (result.tied or []) if g != result.best_index]
    note = f" (tied with {len(tied)} other setting(s); see the ranking)" if tied else ""
    print(f"best setting: {result.best_setting}{note}")
    return 0


#: `marljax train` options that `--algo psro` does not take (it runs `marljax psro`).
_NOT_PSRO = ("config", "preset", "steps", "grid", "out", "name", "devices", "layout",
             "max_memory", "resume", "log", "opponents", "league", "qtable")  # fmt: skip


def _train_psro(args: argparse.Namespace) -> int:
    """`marljax train --algo psro`: `marljax psro` with `--set` keys of `PSROConfig`,
    `PSROHParams` and `MetaSolverHParams` (PSRO trains populations, not one agent, so it writes
    no run directory)."""
    from marljax.population import MetaSolverHParams, PSROConfig, PSROHParams

    given = [k for k in _NOT_PSRO if getattr(args, k, None) not in (None, False, [])]
    if args.allow_hparam_change:
        given.append("allow_hparam_change")
    if given:
        flags = ", ".join("--" + k.replace("_", "-") for k in given)
        raise cfg.ConfigError(
            f"--algo psro takes --env, --seeds, --seed and --set; not {flags} (PSRO grows "
            "populations and writes no run directory; see `marljax psro --help`)"
        )
    sets = cfg.parse_assignments(args.set, "--set")
    groups = {"config": PSROConfig(), "hparams": PSROHParams(), "meta": MetaSolverHParams()}
    nested = ("meta", "br_agent", "br_agent_config", "br_train")  # not settable as text
    names = {g: [n for n in cfg.field_names(obj) if n not in nested] for g, obj in groups.items()}
    split = cfg.route_assignments(sets, names, "--set (psro)")
    config = cfg.replace_checked(groups["config"], split["config"], "psro")
    meta = cfg.replace_checked(groups["meta"], split["meta"], "psro meta-solver")
    hparams = cfg.replace_checked(groups["hparams"], split["hparams"], "psro").replace(meta=meta)
    seeds = 8 if args.seeds is None else args.seeds
    seed = 0 if args.seed is None else args.seed
    return _run_psro(args.env or "matrix/rps-v0", config, hparams, seeds, seed)


def cmd_psro(args: argparse.Namespace) -> int:
    from marljax.population import PSROConfig, PSROHParams

    config = PSROConfig(
        population_size=args.population,
        meta_solver=args.meta_solver,
        best_response=args.best_response,
        br_algo=args.br_algo,
        symmetric=args.symmetric,
    )
    record = {k: v for k, v in vars(args).items() if k not in ("command",)}
    return _run_psro(args.env, config, PSROHParams(), args.seeds, args.seed, args.json, record)


def _check_psro_memory(population: int, seeds: int, available: int | None = None) -> None:
    """Refuse a PSRO run whose arrays would not fit in host memory, before tracing: per seed
    and player a `[K, K]` payoff table and `K` meta-strategies over `K` policies, kept over the
    `K` iterations (float32; twice that for the program's working copies)."""
    from marljax.shell.build import refuse_over_memory

    K = population
    refuse_over_memory(
        seeds * 2 * (2 * K * K) * 4 * 2,
        f"--population {K:,} x --seeds {seeds:,} keeps payoff tables and meta-strategies (K x K "
        "per seed and player)",
        "use a smaller --population or fewer seeds",
        available,
    )


#: measured PSRO time on a 2-core CPU (rps, 8 seeds): 140 s at K=300, growing as about K^3.5
#: (40 s at K=200): the meta-solver works on the K x K tables at each of the K iterations
PSRO_SECONDS_AT_300, PSRO_GROWTH, PSRO_MOST_SECONDS = 140.0, 3.5, 6 * 3600.0


def _check_psro_time(population: int, seeds: int) -> None:
    """Refuse a PSRO run estimated over 6 hours, note one over a minute, before tracing: the
    K iterations are one compiled program, which Ctrl-C cannot stop before it ends."""
    est = PSRO_SECONDS_AT_300 * (population / 300) ** PSRO_GROWTH * max(seeds, 1) / 8
    what = (
        f"--population {population:,} runs {population:,} PSRO iterations in one compiled "
        f"program, estimated at {est / 3600:.1f} h on a 2-core CPU ({PSRO_SECONDS_AT_300:.0f} s "
        f"at 300, growing as about K^{PSRO_GROWTH}); Ctrl-C takes effect only when it ends"
    )
    if est > PSRO_MOST_SECONDS:
        most = 300 * (PSRO_MOST_SECONDS * 8 / max(seeds, 1) / PSRO_SECONDS_AT_300) ** (
            1 / PSRO_GROWTH
        )
        raise cfg.ConfigError(f"{what}; use a --population of at most about {int(most):,} "
                              "(6 h) or fewer --seeds")  # fmt: skip
    if est > 60:
        print(f"marljax: note: {what}", file=sys.stderr)


def _run_psro(env_id, config, hparams, seeds, seed, json_path=None, record=None) -> int:
    """Run `make_psro` for `seeds` seeds in one program and print the NashConv curve."""
    import json

    import jax
    import numpy as np

    from marljax import core
    from marljax.population import make_psro

    if seeds < 1:
        raise cfg.ConfigError(f"--seeds must be >= 1, got {seeds}")
    env, params = core.make(env_id)
    _check_psro_memory(config.population_size, seeds)
    _check_psro_time(config.population_size, seeds)
    run = jax.jit(jax.vmap(make_psro(config, env, params), in_axes=(0, None)))
    keys = jax.vmap(jax.random.PRNGKey)(np.arange(seed, seed + seeds))
    out = jax.device_get(run(keys, hparams))
    nash_conv = np.asarray(out.nash_conv)  # [S, K]
    print(f"PSRO on {env_id}: meta-solver {config.meta_solver}, {config.best_response} best "
          f"responses, {seeds} seeds; NashConv of the meta-strategy (mean [min, max])")  # fmt: skip
    for k in range(nash_conv.shape[1]):
        col = nash_conv[:, k]
        print(f"  K={k + 1:<4d} {col.mean():.4f} [{col.min():.4f}, {col.max():.4f}]")
    final = np.asarray(out.meta_strategy)[:, -1]  # [S, 2, K]
    mixture = np.einsum("sik,sikn->sin", final, np.asarray(out.policies))  # [S, 2, N]
    for i in range(2):
        print(f"  player {i} final mixture over actions (seed mean): "
              f"{np.round(mixture[:, i].mean(0).astype(float), 3).tolist()}")  # fmt: skip
    if json_path:
        with open(json_path, "w") as f:
            json.dump(
                {
                    "args": record,
                    "nash_conv": nash_conv.tolist(),
                    "meta_strategy": final.tolist(),
                    "mixture": mixture.tolist(),
                },
                f,
                indent=1,
                default=str,
            )
        print(f"wrote {json_path}")
    return 0
