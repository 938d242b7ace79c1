"""Generated tables of the remaining baselines (`tables.py` collects them), one per result file.

As in `tables_extra.py`: each function reads what a script wrote with `--results` and returns
markdown for the `<!-- results:NAME -->` markers; CI checks the committed text equals it.
"""

from __future__ import annotations

import os

import numpy as np
from tables_extra import _text as _ci
from tables_extra import comparison_table, steps_text
from tables_extra import readme_rows as extra_readme_rows

from marljax.shell.result_files import (
    count,
    iqm_ci,
    markdown_table,
    mcnemar_exact,
    mean_ci,
    p_greater,
    read_results,
    values,
    wilson_interval,
)

IPD_STATES = ("start", "CC", "CD", "DC", "DD")


def _read(results: str, stem: str) -> dict:
    return read_results(os.path.join(results, stem + ".json"))


def aa_ipd_table(results: str) -> str:
    """`advantage_alignment_ipd.py`: aligned vs naive policy gradient, per initialisation."""
    data = _read(results, "advantage_alignment_ipd")
    names = {"aa": "advantage alignment", "naive": "naive PG"}
    header = ["Learners", "Init std", "Reward per round (mean +- std)",
              "Seeds in mutual cooperation (> -1.1)", "Seeds in mutual defection (< -1.9)",
              "Agent 1 vs always-defect (mean)",
              "P(C \\| " + ", ".join(IPD_STATES) + ") (mean)"]  # fmt: skip
    body = []
    for row in data["rows"]:
        reward = values(row, "reward")
        body.append([names[row["method"]], f"{row['init_std']:g}",
                     f"{reward.mean():.3f} +- {reward.std():.3f}",
                     count(reward, lambda x: x > -1.1), count(reward, lambda x: x < -1.9),
                     f"{values(row, 'vs_always_defect').mean():.3f}",
                     ", ".join(f"{values(row, 'p_c/' + st).mean():.2f}"
                               for st in IPD_STATES)])  # fmt: skip
    return markdown_table(header, body)


def aa_ipd_summary(results: str) -> str:
    """One sentence on `advantage_alignment_ipd.py` at its first initialisation."""
    data = _read(results, "advantage_alignment_ipd")
    first = data["config"]["init_std"][0]
    rows = {r["method"]: r for r in data["rows"] if r["init_std"] == first}
    aa, naive = values(rows["aa"], "reward"), values(rows["naive"], "reward")
    return (f"init std {first:g}, {data['config']['updates']} updates: aligned learners "
            f"{aa.mean():.2f} per round, {count(aa, lambda x: x > -1.1)} seeds in mutual "
            f"cooperation; naive PG {naive.mean():.2f}, {count(naive, lambda x: x < -1.9)} in "
            "mutual defection")  # fmt: skip


def dilemma_table(results: str, algo: str) -> str:
    """`shared_vs_independent_dilemma.py --algo algo`: cooperation per parameter mode."""
    data = _read(results, f"shared_vs_independent_{algo}")
    rows = {r["parameter_mode"]: r for r in data["rows"]}
    independent = values(rows["independent"], "cooperation_rate")
    header = ["parameter mode", "cooperation rate, mean [95% CI]", "IQM [95% CI]",
              "seeds mostly cooperating (> 0.5)", "efficiency (max 4), mean",
              "P(> independent)"]  # fmt: skip
    body = []
    for mode, row in rows.items():
        x = values(row, "cooperation_rate")
        p = "" if mode == "independent" else f"{p_greater(x, independent):.2f}"
        body.append([mode, _ci(mean_ci(x), 3), _ci(iqm_ci(x), 3), count(x, lambda v: v > 0.5),
                     f"{values(row, 'efficiency').mean():.3f}", p])  # fmt: skip
    return markdown_table(header, body)


def lbf_mappo_table(results: str) -> str:
    """`lbf_mappo_ippo.py`: final team return per seed, IQM and when the IQM curve rises."""
    data = _read(results, "lbf_mappo_ippo")
    header = ["algorithm", "parameter mode", "team return, last 10 updates, per seed",
              "IQM [95% CI]", "first env step with IQM >= 0.5 / >= 0.9",
              "episode length, last 10 updates"]  # fmt: skip
    step = lambda v: "never" if v is None else f"{v:,}"  # noqa: E731
    body = []
    for r in data["rows"]:
        x = values(r, "final_team_return")
        body.append([r["algo"].upper(), r["parameter_mode"], ", ".join(f"{v:.3f}" for v in x),
                     _ci(iqm_ci(x), 3),
                     f"{step(r['first_step_iqm_0.5'])} / {step(r['first_step_iqm_0.9'])}",
                     f"{values(r, 'episode_length').mean():.1f}"])  # fmt: skip
    return markdown_table(header, body)


GAME_NAMES = {"climbing": "climbing", "penalty_k100": "penalty k=100",
              "anticoordination": "anti-coordination"}  # fmt: skip


def _optimum(row: dict) -> str:
    wins = values(row, "at_optimum")
    low, high = wilson_interval(int(wins.sum()), wins.size)
    return f"{count(wins, lambda x: x > 0)} [{low:.2f}, {high:.2f}]"


def _joints(row: dict) -> str:
    """The greedy joint actions the seeds ended at, with their payoffs, most frequent first."""
    joint = list(zip(values(row, "action_0").astype(int), values(row, "action_1").astype(int)))
    payoff = dict(zip(joint, values(row, "payoff")))
    n = len(joint)
    order = sorted(set(joint), key=lambda j: (-joint.count(j), j))
    return ", ".join(f"({a}, {b}) = {payoff[(a, b)]:g} in {joint.count((a, b))}/{n}"
                     for a, b in order)  # fmt: skip


def _pairs(results: str, stem: str):
    """`(row, hasac row, masac row)` per (game, actor lr) of a `hasac_matrix.py` file."""
    data = _read(results, stem)
    by = {(r["game"], r["actor_lr"], r["algo"]): r for r in data["rows"]}
    for game, lr, algo in by:
        if algo == "hasac":
            yield data, by[(game, lr, "hasac")], by[(game, lr, "masac")]


def _same(h: dict, m: dict) -> np.ndarray:
    return (values(h, "action_0") == values(m, "action_0")) & (
        values(h, "action_1") == values(m, "action_1")
    )


def hasac_matrix_table(results: str) -> str:
    """`hasac_matrix.py` on climbing and penalty: seeds at the optimum and where they ended."""
    header = ["Game", "Temperature / actor lr", "HASAC at optimum [95% CI]",
              "MASAC at optimum [95% CI]", "HASAC's greedy joint actions",
              "Seeds where MASAC ended at the same joint action"]  # fmt: skip
    body = []
    for stem in ("hasac_matrix", "hasac_matrix_alpha05"):
        for _, h, m in _pairs(results, stem):
            body.append([GAME_NAMES[h["game"]], f"{h['alpha']:g} / {h['actor_lr']:g}",
                         _optimum(h), _optimum(m), _joints(h),
                         count(_same(h, m), lambda x: x)])  # fmt: skip
    return markdown_table(header, body)


def hasac_anticoordination_table(results: str) -> str:
    """`hasac_matrix.py --games anticoordination`: per actor lr, with the paired exact test."""
    header = ["Actor lr", "HASAC at optimum [95% CI]", "MASAC at optimum [95% CI]",
              "Seeds only HASAC / only MASAC solved", "exact McNemar p"]  # fmt: skip
    body = []
    for _, h, m in _pairs(results, "hasac_matrix_anticoordination"):
        a, b = values(h, "at_optimum") > 0, values(m, "at_optimum") > 0
        only_h, only_m = int(np.sum(a & ~b)), int(np.sum(b & ~a))
        body.append([f"{h['actor_lr']:g}", _optimum(h), _optimum(m), f"{only_h} / {only_m}",
                     f"{mcnemar_exact(only_h, only_m):.2f}"])  # fmt: skip
    return markdown_table(header, body)


def hasac_matrix_summary(results: str) -> str:
    """One sentence on `hasac_matrix.py`: optima reached and how often the two schemes differ."""
    hard, anti, pairs, same = [], [], 0, 0
    for stem in ("hasac_matrix", "hasac_matrix_alpha05", "hasac_matrix_anticoordination"):
        for _, h, m in _pairs(results, stem):
            wins = [int(values(r, "at_optimum").sum()) for r in (h, m)]
            n = values(h, "at_optimum").size
            (anti if h["game"] == "anticoordination" else hard).append((wins, n))
            pairs, same = pairs + n, same + int(_same(h, m).sum())
    hard_text = ", ".join(f"{w[0]}/{n} vs {w[1]}/{n}" for w, n in hard)
    lo = min(min(w) for w, _ in anti)
    return (
        f"seeds whose greedy joint action is optimal, HASAC vs MASAC: climbing and penalty "
        f"k=100 (two temperature / learning-rate settings) {hard_text}; anti-coordination "
        f"over {len(anti)} actor learning rates {lo}-{anti[0][1]}/{anti[0][1]} for both; the "
        f"two schemes ended at the same joint action in {same} of {pairs} paired runs"
    )


def _seeds(x) -> str:
    return ", ".join(f"{v:.2f}" for v in np.asarray(x))


def mapf_table(results: str) -> str:
    """`mapf_learned_vs_planner.py`: learned throughput at the start and end, and the heuristics."""
    data = _read(results, "mapf_learned_vs_planner")
    rows = {r["policy"]: r for r in data["rows"]}
    planner = np.asarray(rows["planner heuristic"]["per_episode"]["throughput"])
    header = ["policy", "parameter mode", "first 8 updates, per seed", "last 8 updates, per seed",
              "last 8 updates, mean", "of the planner's"]  # fmt: skip
    body = []
    for name, r in rows.items():
        if "per_episode" in r:
            tp = np.asarray(r["per_episode"]["throughput"])
            body.append([name, "", "", "", f"{tp.mean():.3f} +- {tp.std() / np.sqrt(tp.size):.3f} "
                         f"(s.e.m., {tp.size} episodes)", f"{tp.mean() / planner.mean():.0%}"])  # fmt: skip
            continue
        first, last = values(r, "throughput_first8"), values(r, "throughput_last8")
        body.append([name.upper(), r["parameter_mode"], ", ".join(f"{v:.3f}" for v in first),
                     ", ".join(f"{v:.3f}" for v in last), f"{last.mean():.3f}",
                     f"{last.mean() / planner.mean():.0%}"])  # fmt: skip
    return markdown_table(header, body)


def mapf_summary(results: str) -> str:
    """One sentence on `mapf_learned_vs_planner.py`."""
    data = _read(results, "mapf_learned_vs_planner")
    rows = {r["policy"]: r for r in data["rows"]}
    planner = np.mean(rows["planner heuristic"]["per_episode"]["throughput"])
    learned = [f"{a.upper()} {values(rows[a], 'throughput_last8').mean():.3f}"
               for a in ("ippo", "mappo")]  # fmt: skip
    return (
        f"lifelong MAPF 8x8, 4 agents, {data['config']['total_env_steps']:,} env steps x "
        f"{data['config']['seeds']} seeds: throughput (goals per step) of the last 8 updates "
        + ", ".join(learned)
        + f" vs the planner heuristic's {planner:.3f} (full map "
        f"knowledge) and random {np.mean(rows['uniform random']['per_episode']['throughput']):.3f}"
    )


def cnn_table(results: str, stem: str, task: str) -> str:
    """`cnn_vs_mlp.py` on one task: IQM of each torso, per seed, and P(CNN > MLP)."""
    data = _read(results, stem)
    rows = {r["torso"]: r for r in data["rows"] if r["task"] == task}
    mlp = values(rows["mlp"], "final_return")
    header = ["torso", "IQM [95% CI]", "per seed", "seeds with return > 0",
              "wall time incl. compile", "P(> MLP)"]  # fmt: skip
    body = []
    for torso, r in rows.items():
        x = values(r, "final_return")
        p = "" if torso == "mlp" else f"{p_greater(x, mlp):.2f}"
        body.append([torso.upper(), _ci(iqm_ci(x), 2), _seeds(x), count(x, lambda v: v > 0),
                     f"{r['seconds_incl_compile']:.0f} s", p])  # fmt: skip
    return markdown_table(header, body)


def pqn_table(results: str) -> str:
    """`pqn_vdn_spread.py`: team return of the training episodes, first 10 updates and last."""
    data = _read(results, "pqn_vdn_spread")
    r = data["rows"][0]
    first, final = values(r, "team_return_first10"), values(r, "team_return_final")
    header = ["algorithm", "parameter mode", "env steps per seed", "first 10 updates, per seed",
              "last update, per seed", "last update, IQM [95% CI]"]  # fmt: skip
    steps = data["config"]["train"]["total_env_steps"]
    return markdown_table(header, [[f"PQN-VDN (`{data['config']['preset']}` preset)",
                                    r["parameter_mode"], f"{steps:,}", _seeds(first),
                                    _seeds(final), _ci(iqm_ci(final), 2)]])  # fmt: skip


def baseline_main_table(results: str, stem: str) -> str:
    """A `baseline_main` script's file: final training (and greedy) return per setting (a row
    without a parameter mode is an algorithm with one network for all agents, such as MAT)."""
    data = _read(results, stem)
    greedy = "greedy_return" in data["rows"][0]["per_seed"]
    header = ["algorithm", "parameter mode", "env steps per seed", "final return, per seed",
              "IQM [95% CI]"] + (["greedy return, IQM [95% CI]"] if greedy else [])  # fmt: skip
    body = []
    for r in data["rows"]:
        x = values(r, "final_return")
        body.append([r["algo"].upper(), r["parameter_mode"] or "one network for all agents",
                     f"{data['config']['train']['total_env_steps']:,}", _seeds(x),
                     _ci(iqm_ci(x), 2)]
                    + ([_ci(iqm_ci(values(r, "greedy_return")), 2)] if greedy else []))  # fmt: skip
    return markdown_table(header, body)


SAC_NAMES = {"hasac": "HASAC", "masac": "MASAC", "mappo": "MAPPO"}


def sac_table(results: str, stem: str) -> str:
    """`hasac_spread.py` / `hasac_speaker_listener.py`: both scores per algorithm, with
    P(> the first algorithm's other SAC scheme or MAPPO) and the final temperature / entropy."""
    data = _read(results, stem)
    rows = {r["algo"]: r for r in data["rows"]}
    reference = "masac" if "masac" in rows else "mappo"
    header = ["algorithm", "parameter mode", "train per seed", "train IQM [95% CI]",
              "greedy per seed", "greedy IQM [95% CI]", f"P(> {SAC_NAMES[reference]}) "
              "train / greedy", "final alpha / entropy per agent", "wall (all seeds)"]  # fmt: skip
    body = []
    for algo, r in rows.items():
        tr, gr = values(r, "train"), values(r, "greedy")
        p = "" if algo == reference else (
            f"{p_greater(tr, values(rows[reference], 'train')):.2f} / "
            f"{p_greater(gr, values(rows[reference], 'greedy')):.2f}")  # fmt: skip
        final = r.get("final", {})
        alpha = f"{final['alpha']:.3f}" if "alpha" in final else "-"
        entropy = f"{final['entropy']:.2f}" if "entropy" in final else "-"
        body.append([SAC_NAMES[algo], r["parameter_mode"], _seeds(tr), _ci(iqm_ci(tr), 2),
                     _seeds(gr), _ci(iqm_ci(gr), 2), p, f"{alpha} / {entropy}",
                     f"{r['seconds']:.0f} s"])  # fmt: skip
    return markdown_table(header, body)


def collapse_grid_table(results: str, stem: str, axis: str) -> str:
    """`exploration_collapse.py` over one more axis (`"hidden"` width or `"anneal"` fraction):
    greedy cooperation, mean [95% CI] per mode, and P(mode > shared), at each final epsilon."""
    data = _read(results, stem)
    if len({r["temptation"] for r in data["rows"]}) != 1:
        raise ValueError(f"{stem}: one temptation expected (the table has no temptation column)")
    by = {(r[axis], r["eps"], r["mode"]): values(r, "cooperation") for r in data["rows"]}
    modes = list(dict.fromkeys(m for _, _, m in by))
    others = [m for m in modes if m != "shared"]
    label = {"hidden": "hidden", "anneal": "anneal over (fraction of training)"}[axis]
    header = [label, "final epsilon", *modes, *(f"P({m} > shared)" for m in others)]
    body = []
    for value, eps in dict.fromkeys((v, e) for v, e, _ in by):
        shared = by[value, eps, "shared"]
        body.append([f"{value:g}", f"{eps:g}", *(_ci(mean_ci(by[value, eps, m]), 3) for m in modes),
                     *(f"{p_greater(by[value, eps, m], shared):.2f}" for m in others)])  # fmt: skip
    return markdown_table(header, body)


COOP, PUNISH = "social/cooperation_rate", "social/punishment_rate"


def social_table(results: str, files: dict[str, str]) -> str:
    """`social_mechanisms.py` families of several result files (`{learner label: stem}`):
    cooperation per condition, each compared with its family's control (the first condition)."""
    header = ["learner", "parameter mode", "game", "condition", "steps x seeds",
              "cooperation rate, mean [95% CI]", "return per round", "punishment rate",
              "P(> control)"]  # fmt: skip
    body = []
    for label, stem in files.items():
        data, first, control = _read(results, stem), True, {}
        for r in data["rows"]:
            coop = values(r, COOP)
            steps = data["config"]["env_steps_per_seed"] * (2 if r["per_round_learner"] else 1)
            is_control = r["family"] not in control
            control.setdefault(r["family"], coop)
            body.append([label if first else None, r["parameter_mode"] if first else None,
                         r["family"] if is_control else None, r["condition"],
                         f"{steps_text(steps)} x {coop.size}", _ci(mean_ci(coop), 3),
                         f"{values(r, 'return_per_round').mean():.2f}",
                         f"{values(r, PUNISH).mean():.3f}" if PUNISH in r["per_seed"] else None,
                         None if is_control else f"{p_greater(coop, control[r['family']]):.2f}"])  # fmt: skip
            first = False
    return markdown_table(header, body)


def rps_bots_table(results: str, shown: int = 6) -> str:
    """`rps_population.py`: the paper's metrics over seeds, and the agent's return per match
    against its `shown` worst and best bots."""
    data = _read(results, "rps_population")
    group = next(r for r in data["rows"] if r.get("group") == "all bots")
    bots = {r["bot"]: values(r, "return") for r in data["rows"] if "bot" in r}
    order = sorted(bots, key=lambda b: bots[b].mean())
    header = ["", "mean [95% CI] over seeds"]
    body = [[m, _ci(mean_ci(values(group, m)), 1)]
            for m in ("PopReturn", "WithinPopExpl", "AggScore")]  # fmt: skip
    body += [[f"vs {b} (worst {i + 1})", _ci(mean_ci(bots[b]), 1)]
             for i, b in enumerate(order[:shown])]  # fmt: skip
    body += [[f"vs {b} (best {i + 1})", _ci(mean_ci(bots[b]), 1)]
             for i, b in enumerate(reversed(order[-shown:]))]  # fmt: skip
    return markdown_table(header, body)


HARVEST = {"efficiency": "efficiency (group reward / step)", "equality": "equality (1 - Gini)",
           "sustainability": "sustainability (mean time of reward)",
           "peace": "peace (agents not tagged out, of 3)"}  # fmt: skip


def harvest_long_table(results: str, stem: str) -> str:
    """`ippo_harvest_social.py` with the beam on: untrained vs trained social metrics."""
    data = _read(results, stem)
    by = {r["policy"]: r for r in data["rows"] if r["punishment"] == "on"}
    header = ["metric", "untrained, mean", "trained, mean [95% CI]", "trained, per seed"]
    body = []
    for m, name in HARVEST.items():
        trained = values(by["trained"], m)
        body.append([name, f"{values(by['untrained'], m).mean():.3f}", _ci(mean_ci(trained), 3),
                     ", ".join(f"{v:.3f}" for v in trained)])  # fmt: skip
    train = values(by["trained"], "train_return_last20")
    body.append(["training return, mean of the last 20 updates", "", _ci(mean_ci(train), 2),
                 _seeds(train)])  # fmt: skip
    return markdown_table(header, body)


def spread_curve_table(results: str) -> str:
    """`spread_mappo_curve.py`: IQM [95% CI] over seeds of the return at ten points of training."""
    row = _read(results, "spread_mappo_curve")["rows"][0]
    header = ["env steps", "IQM return [95% CI]", "per seed"]
    body = [[f"{p:,}", _ci(iqm_ci(values(row, f"return@{p}")), 2),
             _seeds(values(row, f"return@{p}"))] for p in row["points"]]  # fmt: skip
    body.append(["final (mean of the last 10 updates)", _ci(iqm_ci(values(row, "final_last10")), 2),
                 _seeds(values(row, "final_last10"))])  # fmt: skip
    return markdown_table(header, body)


#: marker name -> generator of this module (`tables.generate` adds them)
BLOCKS = {
    "aa-ipd": aa_ipd_table,
    "dilemma-ippo": lambda results: dilemma_table(results, "ippo"),
    "dilemma-iql": lambda results: dilemma_table(results, "iql"),
    "lbf-mappo-ippo": lbf_mappo_table,
    "hasac-matrix": hasac_matrix_table,
    "hasac-anticoordination": hasac_anticoordination_table,
    "mapf": mapf_table,
    "cnn-harvest": lambda results: cnn_table(results, "cnn_vs_mlp_harvest", "harvest_small"),
    "cnn-lbf": lambda results: cnn_table(results, "cnn_vs_mlp_lbf", "lbf_grid_5x5"),
    "pqn-vdn-spread": pqn_table,
    "mat-mpe": lambda results: baseline_main_table(results, "mat_mpe"),
    **{
        name.replace("_", "-"): (lambda results, n=name: sac_table(results, n))
        for name in (
            "hasac_spread",
            "hasac_speaker_listener_100k",
            "hasac_speaker_listener_100k_used",
            "hasac_speaker_listener_8seeds",
            "hasac_speaker_listener_used",
        )
    },
    "social-ippo": lambda r: social_table(r, {"IPPO": "social_mechanisms_ippo"}),
    "social-iql": lambda r: social_table(r, {"DQN (greedy)": "social_mechanisms_iql"}),
    "social-coin": lambda r: social_table(
        r, {"IPPO": "social_coin_ippo", "DQN (greedy)": "social_coin_iql"}
    ),
    "rps-bots": rps_bots_table,
    "harvest-1200": lambda r: harvest_long_table(r, "harvest_social_ippo_1200"),
    "spread-mappo-curve": spread_curve_table,
    "collapse-width": lambda r: collapse_grid_table(r, "exploration_collapse_width", "hidden"),
    "collapse-anneal": lambda r: collapse_grid_table(r, "exploration_collapse_anneal", "anneal"),
    **{
        f"happo-mat-{task}": (
            lambda r, t=task: comparison_table(
                r, "happo_mat_vs_mappo", "team_return", "mappo", task=t
            )
        )
        for task in ("spread", "lbf", "climbing")
    },
}


def happo_mat_summary(results: str) -> str:
    """One sentence on `happo_mat_vs_mappo.py`: each task's IQMs and P(X > MAPPO)."""
    data = _read(results, "happo_mat_vs_mappo")
    names = {"spread": "simple spread", "lbf": "LBF 8x8-2p-2f-coop", "climbing": "climbing game"}
    parts = []
    for task, cfg in data["config"]["tasks"].items():
        x = {r["algo"]: values(r, "team_return") for r in data["rows"] if r["task"] == task}
        algos = [a for a in ("happo", "mat") if a in x]
        iqms = ", ".join(f"{a.upper()} {_ci(iqm_ci(x[a]), 2)}" for a in ("mappo", *algos))
        ps = ", ".join(f"P({a.upper()} > MAPPO) = {p_greater(x[a], x['mappo']):.2f}" for a in algos)
        parts.append(f"{names[task]} ({steps_text(cfg['env_steps_per_seed'])} steps): {iqms}; {ps}")
    return (
        f"team return of the last 10 updates, {data['config']['seeds']} seeds, IQM [95% CI], "
        "equal env steps: " + "; ".join(parts)
    )


def dilemma_summary(results: str) -> str:
    """One sentence on `shared_vs_independent_dilemma.py` (IPPO and IQL)."""
    parts, overlap = [], []
    for algo in ("ippo", "iql"):
        data = _read(results, f"shared_vs_independent_{algo}")
        x = {r["parameter_mode"]: values(r, "cooperation_rate") for r in data["rows"]}
        shared, independent = mean_ci(x["shared"]), mean_ci(x["independent"])
        overlap.append(shared[1] <= independent[2] and independent[1] <= shared[2])
        parts.append(f"{algo.upper()} shared {_ci(shared, 2)} vs independent "
                     f"{_ci(independent, 2)} (P(shared > independent) "
                     f"{p_greater(x['shared'], x['independent']):.2f})")  # fmt: skip
    seeds = data["config"]["seeds"]
    verdict = {2: "both pairs of intervals overlap", 1: "one pair of intervals overlaps",
               0: "neither pair of intervals overlaps"}[sum(overlap)]  # fmt: skip
    return (
        f"cooperation rate on the repeated Stag Hunt, {seeds} seeds per mode, mean [95% CI]: "
        + "; ".join(parts)
        + f": {verdict}"
    )


def lbf_mappo_summary(results: str) -> str:
    """One sentence on `lbf_mappo_ippo.py`."""
    data = _read(results, "lbf_mappo_ippo")
    parts = [f"{r['algo'].upper()} {_ci(iqm_ci(values(r, 'final_team_return')), 3)} (IQM "
             f"reaches 0.9 at {r['first_step_iqm_0.9']:,} steps)" for r in data["rows"]]  # fmt: skip
    seeds = len(values(data["rows"][0], "final_team_return"))
    return (
        f"LBF 8x8-2p-2f-coop, {data['config']['total_env_steps']:,} env steps x {seeds} "
        "seeds, team return of the last 10 updates, IQM [95% CI]: " + ", ".join(parts)
    )


def cnn_summary(results: str) -> str:
    """One sentence on `cnn_vs_mlp.py` on Harvest."""
    data = _read(results, "cnn_vs_mlp_harvest")
    x = {r["torso"]: values(r, "final_return") for r in data["rows"]}
    steps = data["config"]["num_envs"] * data["config"]["rollout_len"] * data["config"]["updates"]
    return (
        f"IPPO on Harvest (7x7 windows), {steps:,} env steps x {data['config']['seeds']} "
        f"seeds, return per agent over the last quarter of training, IQM [95% CI]: CNN torso "
        f"{_ci(iqm_ci(x['cnn']), 2)} ({count(x['cnn'], lambda v: v > 0)} seeds above 0), "
        f"flattened MLP {_ci(iqm_ci(x['mlp']), 2)} ({count(x['mlp'], lambda v: v > 0)}); "
        f"P(CNN > MLP) = {p_greater(x['cnn'], x['mlp']):.2f}"
    )


def hasac_spread_summary(results: str) -> str:
    """One sentence on `hasac_spread.py`."""
    data = _read(results, "hasac_spread")
    rows = {r["algo"]: r for r in data["rows"]}
    h, m = values(rows["hasac"], "greedy"), values(rows["mappo"], "greedy")
    return (
        f"continuous simple spread, {data['config']['env_steps_per_seed']:,} env steps x "
        f"{data['config']['seeds']} seeds: greedy return IQM HASAC {_ci(iqm_ci(h), 2)}, MAPPO "
        f"{_ci(iqm_ci(m), 2)}; P(HASAC > MAPPO) = {p_greater(h, m):.2f}"
    )


#: the README's generated rows of this module: (command, parameter mode, summary, reference)
README_ROWS = (
    ("python baselines/advantage_alignment_ipd.py --init-std 1 0.1 --results "
     "baselines/results/advantage_alignment_ipd.json", "independent (one policy per agent)",
     aa_ipd_summary, "Duque et al. 2025"),
    ("`python baselines/shared_vs_independent_dilemma.py --results "
     "baselines/results/shared_vs_independent_ippo.json` (and `--algo iql`)",
     "shared and independent (both run)", dilemma_summary, "Weng & Lee 2026"),
    ("python baselines/lbf_mappo_ippo.py --steps 400000 --results "
     "baselines/results/lbf_mappo_ippo.json", "shared_id", lbf_mappo_summary,
     "Papoudakis et al. 2021"),
    ("`python baselines/hasac_matrix.py --seeds 16 --updates 300 --results "
     "baselines/results/hasac_matrix.json` (and the two other commands of baselines/README.md)",
     "independent", hasac_matrix_summary, "Liu et al. 2024; Claus & Boutilier 1998"),
    ("python baselines/hasac_spread.py --seeds 4 --steps 200000 --utd 1.0 --preset harl_mpe "
     "--results baselines/results/hasac_spread.json", "HASAC independent; MAPPO shared_id",
     hasac_spread_summary, "Liu et al. 2024"),
    ("python baselines/mapf_learned_vs_planner.py --results "
     "baselines/results/mapf_learned_vs_planner.json", "shared", mapf_summary,
     "Skrynnik et al. 2024"),
    ("python baselines/cnn_vs_mlp.py --tasks harvest_small --seeds 8 --updates 400 --envs 8 "
     "--rollout 32 --results baselines/results/cnn_vs_mlp_harvest.json", "shared_id", cnn_summary,
     "Perolat et al. 2017 (the Harvest task)"),
    ("python baselines/happo_mat_vs_mappo.py --seeds 5 --results "
     "baselines/results/happo_mat_vs_mappo.json", "HAPPO independent; MAPPO shared_id; MAT one "
     "shared transformer", happo_mat_summary, "Kuba et al. 2022; Wen et al. 2022"),
)  # fmt: skip


def readme_rows(results: str) -> list[list[str]]:
    """The README rows of `README_ROWS`, each summary computed from its stored files."""
    return extra_readme_rows(results, results, README_ROWS)
