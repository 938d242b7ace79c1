"""More generated tables (`tables.py` collects them): one generator per baseline's result file.

Each function reads the result files a baseline script wrote with `--results` (see the script's
docstring) and returns markdown; `tables.py` places it between the `<!-- results:NAME -->`
markers of the documents and checks in CI that the committed text equals it.
"""

from __future__ import annotations

import json
import os

import numpy as np

from marljax.shell.result_files import (
    count,
    iqm,
    iqm_ci,
    markdown_table,
    mean_ci,
    p_greater,
    read_results,
    values,
)


def _vec(x) -> str:
    return ", ".join(f"{v:.2f}" for v in np.asarray(x, np.float64).ravel())


def _range(x) -> str:
    x = np.asarray(x, np.float64)
    return f"{x.min():.2f}-{x.max():.2f}"


def shapley_table(results: str) -> str:
    """`shapley_credit.py`: Shapley values of scripted teams, with each table's check."""
    data = read_results(os.path.join(results, "shapley_credit.json"))
    cfg = data["config"]
    body = []
    for row in data["rows"]:
        m = {k: np.asarray(v[0], np.float64) for k, v in row["per_seed"].items()}
        gain = float(m["v_all"] - m["v_none"])
        team, base = row["setting"], row["baseline"]
        if "exact" in m:
            check = f"sum {m['exact'].sum():.4f} vs v(all) - v(none) {gain:.4f}"
            if "analytic" in m:
                check = f"analytic {_vec(m['analytic'])}; max gap {_gap(m['exact'], m)}"
            what = "exact" + (" (one batch)" if "mc" in m else "")
            body.append([team, base, what, _vec(m["exact"]), check])
        if "mc" in m:
            what = f"Monte Carlo (stderr {_range(m['mc_stderr'])})"
            check = f"sum {m['mc'].sum():.2f} vs gain {gain:.2f} (fresh episodes)"
            if "analytic" in m:
                check = f"analytic {_vec(m['analytic'])}; max gap {_gap(m['mc'], m)}"
            body.append([team, base, what, _vec(m["mc"]), check])
        if "exact_mean" in m:
            what = f"exact, mean of {cfg['exact_batches']} batches"
            check = f"MC vs this mean: max \\|z\\| {m['mc_z'].max():.2f} (combined stderr)"
            body.append([team, base, what, _vec(m["exact_mean"]), check])
    return markdown_table(["team", "absent agents play", "estimator", "Shapley values", "check"],
                          body)  # fmt: skip


def _gap(phi: np.ndarray, m: dict) -> str:
    return f"{np.abs(phi - m['analytic']).max():.2f}"


def shapley_summary(results: str) -> str:
    """The README row's sentence for `shapley_credit.py`."""
    rows = read_results(os.path.join(results, "shapley_credit.json"))["rows"]

    def get(setting: str, base: str) -> dict[str, np.ndarray]:
        row = next(r for r in rows if r["setting"] == setting and r["baseline"] == base)
        return {k: np.asarray(v[0]) for k, v in row["per_seed"].items()}

    idle = max(abs(float(get(s, "noop")["exact"][-1])) for s in
               ("simple_spread, 3 agents", "simple_spread, 6 agents"))  # fmt: skip
    pg = get("public_goods, 4 agents", "noop")
    z = max(float(get("simple_spread, 6 agents", b)["mc_z"].max()) for b in ("noop", "random"))
    return (f"exact and Monte Carlo Shapley credit of scripted teams: the idle particle agent "
            f"gets {idle:.1g} with the no-op baseline (a null player), the public-goods values "
            f"are {_vec(pg['exact'])} against the analytic {_vec(pg['analytic'])}, and Monte "
            f"Carlo agrees with the exact mean within {z:.2f} combined standard errors")  # fmt: skip


def _iqm(x) -> str:
    return _text(iqm_ci(x), 3)


SWARM_POLICIES = {"mfpg[histogram]": "mfpg, histogram critic",
                  "mfpg[kernel]": "mfpg, kernel critic", "random": "random"}  # fmt: skip


def swarm_rows(results: str, env: str) -> dict[tuple[int, str], dict]:
    """`swarm_meanfield.py`'s rows of one env, by `(agents at evaluation, policy)`."""
    rows = read_results(os.path.join(results, "swarm_meanfield.json"))["rows"]
    return {(r["eval_agents"], r["policy"]): r for r in rows if r["env"] == env}


def swarm_table(results: str, env: str) -> str:
    """The order parameter of the trained and the random policies, per swarm size."""
    body = []
    by = swarm_rows(results, env)
    for n, policy in sorted(by, key=lambda k: (k[0], list(SWARM_POLICIES).index(k[1]))):
        row = by[n, policy]
        mean, final = values(row, "episode_mean"), values(row, "final")
        body.append([f"{n:,}", SWARM_POLICIES[policy], _iqm(mean), _iqm(final),
                     ", ".join(f"{v:.3f}" for v in mean)])  # fmt: skip
    for n in sorted({n for n, _ in by}):
        p = p_greater(values(by[n, "mfpg[kernel]"], "episode_mean"),
                      values(by[n, "mfpg[histogram]"], "episode_mean"))  # fmt: skip
        body.append([f"{n:,}", "P(kernel > histogram), episode mean", f"{p:.2f}", "", ""])
    header = ["agents at evaluation", "policy", "episode mean, IQM [95% CI]",
              "final step, IQM [95% CI]", "episode mean per seed"]  # fmt: skip
    return markdown_table(header, body)


def swarm_summary(results: str) -> str:
    """The README row's sentence for `swarm_meanfield.py`."""
    parts = []
    for env, name, what in (("swarm/vicsek-v0", "Vicsek", "polarisation"),
                            ("swarm/kuramoto-v0", "Kuramoto", "synchronisation")):  # fmt: skip
        by = swarm_rows(results, env)
        score = lambda n, p, by=by: iqm(values(by[n, p], "episode_mean"))  # noqa: E731
        best = {n: max(score(n, p) for p in ("mfpg[histogram]", "mfpg[kernel]"))
                for n in sorted({n for n, _ in by})}  # fmt: skip
        ratios = ", ".join(f"{best[n] / score(n, 'random'):.1f}x at {n:,} agents" for n in best)
        small = min(best)
        parts.append(f"{name} {what} {score(small, 'random'):.2f} (random) -> "
                     f"{best[small]:.2f} (IQM, better critic; {ratios})")  # fmt: skip
    seeds = len(values(next(iter(swarm_rows(results, "swarm/vicsek-v0").values())), "final"))
    return (f"the mean-field policy gradient, trained with 100 agents ({seeds} seeds), raises "
            + "; ".join(parts) + " (the same policy runs the larger swarm)")  # fmt: skip


#: `bn_mappo_coordination.py`'s result files, by the column title of their game
BN_MAPPO = {"penalty k = 25": "bn_mappo_penalty_k25.json",
            "3-agent coordination": "bn_mappo_coordination_3p.json",
            "penalty k = 100": "bn_mappo_penalty_k100.json"}  # fmt: skip
BN_VARIANTS = {"MAPPO": "MAPPO", "BN-MAPPO (chain graph)": "BN chain",
               "BN-MAPPO (full graph)": "BN full",
               "BN-MAPPO (learned graph)": "BN learned (dense start, default)",
               "BN-MAPPO (learned graph, uniform start)": "BN learned, uniform start",
               "BN-MAPPO (annealed to independent)": "BN learned, annealed to independent"}  # fmt: skip


def bn_mappo_rows(results: str) -> dict[str, tuple[dict, dict[str, dict]]]:
    """Per game title: `(config, {variant: row})` of `bn_mappo_coordination.py`."""
    out = {}
    for title, stem in BN_MAPPO.items():
        data = read_results(os.path.join(results, stem))
        out[title] = (data["config"], {r["variant"]: r for r in data["rows"]})
    return out


def _at_optimum(row: dict, config: dict) -> str:
    return count(values(row, "final_return"), lambda x: x >= 0.95 * config["optimum"])


def bn_mappo_table(results: str) -> str:
    """Seeds at an optimum and IQM of the final return, per variant and game."""
    games = bn_mappo_rows(results)
    header = ["variant"]
    for title in games:
        header += [f"{title}: at optimum", "IQM [95% CI]", "graph density first -> last"]
    body = []
    for variant, name in BN_VARIANTS.items():
        line = [name]
        for config, rows in games.values():
            row = rows[variant]
            point, low, high = iqm_ci(values(row, "final_return"))
            density = ""
            if "graph_density_first" in row["per_seed"]:
                density = (f"{np.mean(values(row, 'graph_density_first')):.2f} -> "
                           f"{np.mean(values(row, 'graph_density_last')):.2f}")  # fmt: skip
            line += [_at_optimum(row, config), f"{point:.2f} [{low:.2f}, {high:.2f}]", density]
        body.append(line)
    return markdown_table(header, body)


def bn_mappo_summary(results: str) -> str:
    """The README row's sentence for `bn_mappo_coordination.py` on the penalty game."""
    config, rows = bn_mappo_rows(results)["penalty k = 25"]
    at = {v: _at_optimum(rows[v], config) for v in BN_VARIANTS}
    return (f"BN-MAPPO reaches the optimum of the penalty game (k = 25) in "
            f"{at['BN-MAPPO (chain graph)']} seeds on the fixed chain, "
            f"{at['BN-MAPPO (learned graph)']} on the learned graph (dense start, default), "
            f"{at['BN-MAPPO (learned graph, uniform start)']} on a learned graph started uniform, "
            f"MAPPO in {at['MAPPO']} ({_steps_k(config['env_steps_per_seed'])} plays per seed)")  # fmt: skip


def _steps_k(n: int) -> str:
    return f"{n:,}"


#: `tune_compare.py --json` files (`bench/results/tune/`), by task, in the table's order
TUNE_FILES = {"spread": "2026-11-29_spread.json",
              "speaker_listener": "2026-11-29_speaker_listener.json",
              "climbing": "2026-11-29_climbing.json"}  # fmt: skip
TUNE_NAMES = {"spread": "MPE simple spread", "speaker_listener": "MPE speaker-listener",
              "climbing": "climbing game"}  # fmt: skip


def _interval(v: list[float], digits: int = 2) -> str:
    point, low, high = v
    if low == high == point:
        return f"{point:.{digits}f}"
    return f"{point:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def tune_runs(tune: str) -> dict[str, dict]:
    """The stored `tune_compare.py` results, by task."""
    out = {}
    for task, name in TUNE_FILES.items():
        with open(os.path.join(tune, name)) as f:
            out[task] = json.load(f)
    return out


def tune_table(tune: str) -> str:
    """Random search vs PBT vs halving: IQM of each repetition's best run, P(improvement)."""
    body = []
    for task, data in tune_runs(tune).items():
        procs = data["procedures"]
        seeds = {len(p["scores"]) for p in procs.values()}
        body.append([f"{data['algo'].upper()}, {TUNE_NAMES[task]} ({data['steps_per_run']:,}; "
                     f"{'/'.join(map(str, sorted(seeds)))} repetitions)",
                     *(_interval(procs[p]["iqm"]) for p in ("random", "pbt", "halving")),
                     _interval(data["p_improve_pbt_vs_random"]),
                     _interval(data["p_improve_halving_vs_random"])])  # fmt: skip
    header = ["task (env steps per run)", "random search IQM [95% CI]", "PBT", "halving",
              "P(PBT > random)", "P(halving > random)"]  # fmt: skip
    return markdown_table(header, body)


def tune_summary(tune: str) -> str:
    """The README row's sentence for `tune_compare.py`."""
    runs = tune_runs(tune)
    iq = lambda task, p: f"{runs[task]['procedures'][p]['iqm'][0]:.2f}"  # noqa: E731
    part = lambda task: " / ".join(iq(task, p) for p in ("pbt", "halving", "random"))  # noqa: E731
    pp = lambda task: _interval(runs[task]["p_improve_pbt_vs_random"])  # noqa: E731
    reps = runs["spread"]["reps"]
    return (f"PBT and successive halving vs random search over `lr` and `ent_coef` at equal env "
            f"steps (MAPPO's defaults, {reps} repetitions of each whole procedure, each a "
            f"population in one program): best run's final greedy return IQM (PBT / halving / "
            f"random), spread {part('spread')} (P(PBT > random) {pp('spread')}), "
            f"speaker-listener {part('speaker_listener')} ({pp('speaker_listener')}): at these "
            f"budgets random search ties both")  # fmt: skip


def _mean_ci(x, digits: int = 3) -> str:
    return _text(mean_ci(x), digits)


def steps_text(n: int) -> str:
    """200k, 1.5M; budgets that are not round thousands in full (9,600)."""
    if n >= 1_000_000 and n % 100_000 == 0:
        return f"{n / 1e6:g}M"
    return f"{n // 1000}k" if n % 1000 == 0 else f"{n:,}"


def _text(estimate: tuple[float, float, float], digits: int) -> str:
    point, low, high = estimate
    return f"{point:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def aa_coin_summary(results: str) -> str:
    """The README row's sentence for `aa_coin_game.py`."""
    data = read_results(os.path.join(results, "aa_coin_game.json"))
    rows = {r["aa_beta"]: r for r in data["rows"]}
    aa, ippo = rows[max(rows)], rows[0.0]
    own, eff = "social/cooperation_rate", "social/efficiency"
    seeds = len(values(aa, own))
    return (f"Advantage Alignment (`aa_beta = {max(rows):g}`) as a PPO agent on the Coin Game "
            f"(3x3, {_steps_k(data['config']['env_steps_per_seed'])} env steps, {seeds} seeds, "
            f"mean [95% CI]): own-coin rate {_mean_ci(values(aa, own))} vs IPPO's "
            f"{_mean_ci(values(ippo, own))}, efficiency per step {_mean_ci(values(aa, eff))} vs "
            f"{_mean_ci(values(ippo, eff))}")  # fmt: skip


def _iqm2(x) -> str:
    return _text(iqm_ci(x), 2)


def comparison_table(results: str, stem: str, metric: str, reference: str, **where) -> str:
    """Algorithms compared on one score: IQM and mean [95% CI] over seeds, the per-seed values
    and P(algorithm > `reference`) (rows of `stem`'s result file matching `where`)."""
    data = read_results(os.path.join(results, stem + ".json"))
    rows = [r for r in data["rows"] if all(r.get(k) == v for k, v in where.items())]
    mode = data["config"].get("parameter_mode", "")
    if isinstance(mode, dict):  # per task (rows may name their own)
        mode = mode.get(where["task"], "")
    ref = next(values(r, metric) for r in rows if r["algo"] == reference)
    body = []
    for r in rows:
        x = values(r, metric)
        p = "" if r["algo"] == reference else f"{p_greater(x, ref):.2f}"
        body.append([r["algo"], r.get("parameter_mode", mode), _iqm2(x), _mean_ci(x, 2),
                     ", ".join(f"{v:.2f}" for v in x), p])  # fmt: skip
    header = ["algorithm", "parameter mode", "IQM [95% CI]", "mean [95% CI]", "per seed",
              f"P(> {reference})"]  # fmt: skip
    return markdown_table(header, body)


def _scores(results: str, stem: str, metric: str, **where) -> dict[str, np.ndarray]:
    rows = read_results(os.path.join(results, stem + ".json"))["rows"]
    return {r["algo"]: values(r, metric) for r in rows
            if all(r.get(k) == v for k, v in where.items())}  # fmt: skip


def shaq_summary(results: str) -> str:
    """The README row's sentence for `shaq_vdn_qmix.py`."""
    data = read_results(os.path.join(results, "shaq_vdn_qmix.json"))
    m = _scores(results, "shaq_vdn_qmix", "greedy_payoff", task="matrix")
    sp = _scores(results, "shaq_vdn_qmix", "team_return_last10", task="spread")
    at = ", ".join(count(m[a], lambda x: x >= 8) for a in ("shaq", "vdn", "qmix"))
    p_vdn = p_greater(sp["shaq"], sp["vdn"])
    cfg = data["config"]
    return (f"SHAQ vs VDN vs QMIX, small budgets: the non-monotonic game's optimum in {at} seeds "
            f"({_steps_k(cfg['matrix_env_steps_per_seed'])} env steps); simple spread at "
            f"{_steps_k(cfg['spread_env_steps_per_seed'])} steps x {len(sp['shaq'])} seeds, team "
            f"return IQM " + ", ".join(f"{a.upper()} {iqm(sp[a]):.1f}" for a in sp)
            + f", P(SHAQ > VDN) = {p_vdn:.2f}, P(SHAQ > QMIX) = "
            f"{p_greater(sp['shaq'], sp['qmix']):.2f}: "
            + ("SHAQ ahead of VDN" if p_vdn > 0.5 else "SHAQ not ahead of VDN")
            + " at this budget")  # fmt: skip


def transf_summary(results: str) -> str:
    """The README row's sentence for `transf_qmix_spread.py`."""
    data = read_results(os.path.join(results, "transf_qmix_spread.json"))
    s = _scores(results, "transf_qmix_spread", "greedy_team_return")
    cfg = data["config"]
    return (f"TransfQMIX vs QMIX on simple spread, each with its JaxMARL preset, "
            f"{_steps_k(cfg['env_steps_per_seed'])} steps x {cfg['seeds']} seeds (the paper "
            f"trains for millions): greedy team return IQM {_iqm2(s['transf_qmix'])} vs "
            f"{_iqm2(s['qmix'])}, P(TransfQMIX > QMIX) = "
            f"{p_greater(s['transf_qmix'], s['qmix']):.2f}")  # fmt: skip


def lbf_summary(results: str) -> str:
    """The README row's sentence for `lbf_qmix_iql.py`."""
    data = read_results(os.path.join(results, "lbf_qmix_iql.json"))
    s = _scores(results, "lbf_qmix_iql", "final_team_return")
    cfg = data["config"]
    seeds = len(next(iter(s.values())))
    reached = [f"{r['algo'].upper()} at {r['first_step_iqm_0.5']:,}" for r in data["rows"]
               if r["first_step_iqm_0.5"] is not None]  # fmt: skip
    return (f"LBF 8x8-2p-2f-coop at {_steps_k(cfg['env_steps_per_seed'])} steps, {seeds} seeds: "
            "team return of the last 10 updates, IQM "
            + ", ".join(f"{a.upper()} {iqm(x):.2f}" for a, x in s.items())
            + "; the IQM curve first reaches 0.5: "
            + (", ".join(reached) if reached else "none") + " env steps")  # fmt: skip


HARVEST_METRICS = {"efficiency": "efficiency (group reward / step)",
                   "equality": "equality (1 - Gini)",
                   "sustainability": "sustainability (mean time of reward)",
                   "peace": "peace (agents not tagged out, of 3)"}  # fmt: skip


def harvest_rows(results: str, algo: str) -> dict[tuple[str, str], dict]:
    """`ippo_harvest_social.py --algo algo`'s rows by `(punishment, policy)`."""
    data = read_results(os.path.join(results, f"harvest_social_{algo}.json"))
    return {(r["punishment"], r["policy"]): r for r in data["rows"]}


def _mean_ci_any(x: np.ndarray) -> str:
    x = x[np.isfinite(x)]
    if np.ptp(x) == 0:
        return f"{x[0]:.3f}"
    point, low, high = mean_ci(x)
    digits = 1 if abs(point) >= 5 else 3
    return f"{point:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def harvest_table(results: str, algo: str) -> str:
    """Trained policies with the tagging beam on and off: mean [95% CI] and P(on > off)."""
    by = harvest_rows(results, algo)
    body = []
    for m, name in HARVEST_METRICS.items():
        on, off = values(by["on", "trained"], m), values(by["off", "trained"], m)
        body.append([name, _mean_ci_any(on), _mean_ci_any(off), f"{p_greater(on, off):.2f}"])
    return markdown_table(["metric", "tagging on", "tagging off", "P(on > off)"], body)


def harvest_summary(results: str) -> str:
    """The README row's sentence for the Harvest beam check (IPPO and DQNs)."""
    parts = []
    for algo, name in (("ippo", "IPPO"), ("iql", "greedy DQNs")):
        by = harvest_rows(results, algo)
        on, off = (values(by[c, "trained"], "sustainability") for c in ("on", "off"))
        eff = values(by["on", "trained"], "efficiency")
        parts.append(f"{name}: sustainability {np.mean(on):.1f} vs {np.mean(off):.1f} "
                     f"({count(on - off, lambda d: d > 0)} seeds longer with the beam), "
                     f"efficiency with the beam {np.mean(eff):.3f}")  # fmt: skip
    data = read_results(os.path.join(results, "harvest_social_ippo.json"))
    cfg = data["config"]
    return (f"Harvest with the tagging beam vs without it ({cfg['seeds']} seeds, "
            f"{_steps_k(cfg['env_steps_per_seed'])} env steps): " + "; ".join(parts)
            + " (both sharing one network with an agent id); the public goods game and Coin "
            "Game mechanisms of `social_mechanisms.py` are in baselines/README.md, the punishment "
            "paper's own Prisoner's Dilemma settings in the generated row above")  # fmt: skip


def collapse_rows(results: str) -> tuple[dict, dict[tuple[float, float, str], np.ndarray]]:
    """`exploration_collapse.py`'s config and per-seed cooperation by `(T, epsilon, mode)`."""
    data = read_results(os.path.join(results, "exploration_collapse.json"))
    by = {(r["temptation"], r["eps"], r["mode"]): values(r, "cooperation") for r in data["rows"]}
    return data["config"], by


def collapse_table(results: str) -> str:
    """Greedy cooperation, mean [95% CI] per temptation, final epsilon and parameter mode."""
    _, by = collapse_rows(results)
    modes = list(dict.fromkeys(m for _, _, m in by))
    body = []
    for t, eps in dict.fromkeys((t, e) for t, e, _ in by):
        cells = [_mean_ci(by[t, eps, m]) for m in modes]
        p = p_greater(by[t, eps, "independent"], by[t, eps, "shared"])
        body.append([f"{t:g}", f"{eps:g}", *cells, f"{p:.2f}"])
    header = ["T = 1 + D_r", "final epsilon", *modes, "P(independent > shared)"]
    return markdown_table(header, body)


def collapse_summary(results: str) -> str:
    """The README row's sentence for `exploration_collapse.py`."""
    cfg, by = collapse_rows(results)
    temps = sorted({t for t, _, _ in by})
    eps = sorted({e for _, e, _ in by})
    mean = lambda t, e, m: f"{np.mean(by[t, e, m]):.2f}"  # noqa: E731
    falls = "; ".join(f"T = {t:g}: " + " -> ".join(mean(t, e, "shared") for e in eps)
                      for t in temps)  # fmt: skip
    low = eps[0]
    others = ", ".join(f"{m} {mean(temps[0], low, m)}" for m in
                       dict.fromkeys(m for _, _, m in by) if m != "shared")  # fmt: skip
    m = lambda t, e, mode: float(np.mean(by[t, e, mode]))  # noqa: E731
    fell = all(m(t, a, "shared") > m(t, b, "shared") for t in temps for a, b in zip(eps, eps[1:]))
    less = all(m(t, low, o) < m(t, low, "shared") for t in temps for o in
               dict.fromkeys(mode for _, _, mode in by) if o != "shared")  # fmt: skip
    return (f"shared-policy DQN on a {cfg['side']}x{cfg['side']} spatial PD ({cfg['seeds']} seeds "
            f"per cell, {_steps_k(cfg['env_steps_per_seed'])} env steps): greedy cooperation "
            + ("falls" if fell else "does not fall steadily") + " with exploration (epsilon "
            + " / ".join(f"{e:g}" for e in eps) + f"; {falls})"
            + (", the paper's collapse" if fell else "") + "; "
            + ("but less sharing cooperates less, unlike the paper" if less else
               "less sharing does not cooperate less everywhere")
            + f" (T = {temps[0]:g}, epsilon {low:g}: shared {mean(temps[0], low, 'shared')}, "
            f"{others}); network widths and annealing schedules at 64 seeds: baselines/README.md")  # fmt: skip


def maddpg_summary(results: str) -> str:
    """The README row's sentence for `maddpg_spread.py` (MADDPG vs MAPPO)."""
    data = read_results(os.path.join(results, "maddpg_spread.json"))
    rows = {r["algo"]: r for r in data["rows"]}
    cfg = data["config"]
    tr = _scores(results, "maddpg_spread", "train")
    gr = _scores(results, "maddpg_spread", "greedy")
    cost = rows["mappo"]["env_steps_per_s"] / rows["maddpg"]["env_steps_per_s"]
    fac = _scores(results, "facmac_spread", "greedy")
    return (f"continuous simple spread, {_steps_k(cfg['env_steps_per_seed'])} env steps x "
            f"{cfg['seeds']} seeds: MADDPG (the paper's settings) reaches a per-agent training "
            f"return of IQM {_iqm2(tr['maddpg'])} vs MAPPO's {_iqm2(tr['mappo'])}, greedy "
            f"{_iqm2(gr['maddpg'])} vs {_iqm2(gr['mappo'])}, P(MADDPG > MAPPO) = "
            f"{p_greater(gr['maddpg'], gr['mappo']):.2f} (greedy); MADDPG costs {cost:.0f}x "
            f"MAPPO's time per env step; FACMAC (`--algos facmac,mappo --results "
            f"baselines/results/facmac_spread.json`, same budget and MAPPO seeds) greedy "
            f"{_iqm2(fac['facmac'])}, P(FACMAC > MAPPO) = "
            f"{p_greater(fac['facmac'], fac['mappo']):.2f}: baselines/README.md")  # fmt: skip


def hasac_summary(results: str) -> str:
    """The README row's sentence for `hasac_speaker_listener.py`."""
    data = read_results(os.path.join(results, "hasac_speaker_listener.json"))
    cfg = data["config"]
    gr = _scores(results, "hasac_speaker_listener", "greedy")
    names = {"hasac": "HASAC", "masac": "MASAC", "mappo": "MAPPO"}
    return (f"continuous speaker-listener (heterogeneous roles), "
            f"{_steps_k(cfg['env_steps_per_seed'])} env steps x {cfg['seeds']} seeds: greedy "
            "return IQM " + ", ".join(f"{names[a]} {_iqm2(x)}" for a, x in gr.items())
            + f"; P(HASAC > MASAC) = {p_greater(gr['hasac'], gr['masac']):.2f}, "
            f"P(HASAC > MAPPO) = {p_greater(gr['hasac'], gr['mappo']):.2f} (the scripted "
            "listeners that ignore or use the message, 100k-step and 8-seed runs: "
            "baselines/README.md)")  # fmt: skip


def rps_summary(results: str) -> str:
    """The README row's sentence for `rps_population.py` (all bots, the paper's metrics)."""
    data = read_results(os.path.join(results, "rps_population.json"))
    cfg = data["config"]
    group = next(r for r in data["rows"] if r.get("group") == "all bots")
    bots = {r["bot"]: values(r, "return") for r in data["rows"] if "bot" in r}
    worst = min(bots, key=lambda b: np.mean(bots[b]))
    ref = cfg["reference_bots"]
    metric = lambda k: _mean_ci(values(group, k), 1)  # noqa: E731
    return (f"the paper's protocol ({cfg['rounds']}-throw matches against all "
            f"{group['bots']} competition bots): a recurrent IPPO agent trained on the league "
            f"({cfg['seeds']} seeds, {cfg['learner_steps_per_seed']:,} learner steps each), "
            f"mean [95% CI] over seeds: PopReturn {metric('PopReturn')}, WithinPopExpl "
            f"{metric('WithinPopExpl')}, AggScore {metric('AggScore')} (in the bots' own "
            f"cross-table: randbot {ref['randbot']['aggregate_score']:.1f}, Iocaine Powder "
            f"{ref['iocainebot']['aggregate_score']:.1f}, Greenberg "
            f"{ref['greenberg']['aggregate_score']:.1f}); its worst match is against {worst} "
            f"({np.mean(bots[worst]):.1f} per match); held-out bots: baselines/README.md")  # fmt: skip


#: the README's generated rows of this module: (command, parameter mode, summary, reference);
#: a summary reads `baselines/results/` except `tune_summary` (`bench/results/tune/`)
README_ROWS = (
    ("python baselines/shapley_credit.py --results baselines/results/shapley_credit.json",
     "scripted policies", shapley_summary, "Heuillet et al. 2022"),
    ("python baselines/bn_mappo_coordination.py --env matrix/penalty_k25-v0 --seeds 16 "
     "--results baselines/results/bn_mappo_penalty_k25.json", "shared_id", bn_mappo_summary,
     "Chen et al. 2023; Claus & Boutilier 1998"),
    ("python baselines/swarm_meanfield.py --results baselines/results/swarm_meanfield.json",
     "shared (mean field)", swarm_summary, "Cui et al. 2024 (Dec-POMFC)"),
    ("python baselines/shaq_vdn_qmix.py --task matrix spread --seeds 8 --spread-steps 20000 "
     "--results baselines/results/shaq_vdn_qmix.json",
     "shared_id (matrix game); shared (spread, the `jaxmarl` preset)", shaq_summary,
     "Wang et al. 2022"),
    ("python baselines/lbf_qmix_iql.py --algos shaq vdn qmix iql --results "
     "baselines/results/lbf_qmix_iql.json", "shared_id (SHAQ: shared)", lbf_summary,
     "Rashid et al. 2018; Papoudakis et al. 2021"),
    ("python baselines/transf_qmix_spread.py --seeds 4 --steps 40000 --results "
     "baselines/results/transf_qmix_spread.json",
     "TransfQMIX shared, QMIX shared_id (their `jaxmarl` presets)", transf_summary,
     "Gallici et al. 2023"),
    ("python baselines/exploration_collapse.py --seeds 32 --results "
     "baselines/results/exploration_collapse.json",
     "shared, shared_id, grouped and independent (each run)", collapse_summary,
     "Weng & Lee 2026"),
    ("python baselines/aa_coin_game.py --seeds 8 --steps 320000 --results "
     "baselines/results/aa_coin_game.json", "independent (AA and its IPPO control)",
     aa_coin_summary, "Duque et al. 2025"),
    ("python baselines/maddpg_spread.py --seeds 4 --steps 200000 --utd 1.0 --results "
     "baselines/results/maddpg_spread.json", "MADDPG independent; MAPPO shared_id",
     maddpg_summary, "Lowe et al. 2017"),
    ("python baselines/hasac_speaker_listener.py --seeds 4 --steps 400000 --results "
     "baselines/results/hasac_speaker_listener.json", "HASAC, MASAC independent; MAPPO shared_id",
     hasac_summary, "Liu et al. 2024; Lowe et al. 2017"),
    ("`python baselines/ippo_harvest_social.py --seeds 4 --updates 300 --punishment on off "
     "--results baselines/results/harvest_social_ippo.json` (and `--algo iql`, "
     "`harvest_social_iql.json`)", "shared_id", harvest_summary,
     "Dasgupta & Musolesi 2025; Perolat et al. 2017"),
    ("python baselines/rps_population.py --updates 40 --envs 4 --seeds 5 --episodes 8 --rounds "
     "1000 --results baselines/results/rps_population.json", "shared (one learner)", rps_summary,
     "Lanctot et al. 2023"),
    ("`python baselines/tune_compare.py --task spread --json F` (and `--task speaker_listener "
     "--steps 163840`; files in `bench/results/tune/`)", "shared_id", tune_summary,
     "Jaderberg et al. 2017; Li et al. 2020"),
)  # fmt: skip


def readme_rows(results: str, tune: str, rows: tuple = README_ROWS) -> list[list[str]]:
    """README rows `(command, parameter mode, summary, reference)` (default `README_ROWS`), each
    summary computed from its stored files."""
    quoted = lambda c: c if c.startswith("`") else f"`{c}`"  # noqa: E731
    return [[quoted(command), mode, summary(tune if summary is tune_summary else results), ref]
            for command, mode, summary, ref in rows]  # fmt: skip
