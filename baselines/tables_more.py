"""Generated tables of the remaining baselines (`tables.py` collects them), one per result file.

As in `tables_extra.py`: each function reads what a script wrote with `--results` and returns
markdown for the `<!-- results:NAME -->` markers; CI checks the committed text equals it.
"""

from __future__ import annotations

import os

import numpy as np

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


def _ci(estimate: tuple[float, float, float], digits: int) -> str:
    point, low, high = estimate
    return f"{point:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


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
    reached, pairs, same = [], 0, 0
    for stem in ("hasac_matrix", "hasac_matrix_alpha05", "hasac_matrix_anticoordination"):
        for _, h, m in _pairs(results, stem):
            wins = [int(values(r, "at_optimum").sum()) for r in (h, m)]
            n = values(h, "at_optimum").size
            reached.append(f"{GAME_NAMES[h['game']]} (actor lr {h['actor_lr']:g}) "
                           f"{wins[0]}/{n} vs {wins[1]}/{n}")  # fmt: skip
            pairs, same = pairs + n, same + int(_same(h, m).sum())
    return (
        "seeds whose greedy joint action is optimal, HASAC vs MASAC: "
        + "; ".join(reached)
        + f"; the two schemes ended at the same joint action in {same} of {pairs} paired "
        "runs"
    )


#: marker name -> generator of this module (`tables.generate` adds them)
BLOCKS = {
    "aa-ipd": aa_ipd_table,
    "dilemma-ippo": lambda results: dilemma_table(results, "ippo"),
    "dilemma-iql": lambda results: dilemma_table(results, "iql"),
    "lbf-mappo-ippo": lbf_mappo_table,
    "hasac-matrix": hasac_matrix_table,
    "hasac-anticoordination": hasac_anticoordination_table,
}


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
)  # fmt: skip


def readme_rows(results: str) -> list[list[str]]:
    """The README rows of `README_ROWS`, each summary computed from its stored files."""
    quoted = lambda c: c if c.startswith("`") else f"`{c}`"  # noqa: E731
    return [[quoted(c), mode, summary(results), ref] for c, mode, summary, ref in README_ROWS]
