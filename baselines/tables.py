"""Generate the results tables of README.md, baselines/README.md and docs/ from the stored results.

Every table between `<!-- results:NAME -->` markers is computed here from the per-seed files in
`baselines/results/` (written by the baselines' `--results FILE`): means, CIs, IQMs and seed
counts are never typed. Regenerate after adding or changing a result file; CI fails when the
committed tables differ from what the files give (`tests/test_results_tables.py`).

    python baselines/tables.py            # rewrite the marked tables in place
    python baselines/tables.py --check    # exit 1 naming the stale tables
"""

from __future__ import annotations

import argparse
import collections
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tables_extra, when imported

from tables_extra import (  # noqa: E402
    bn_mappo_table,
    collapse_table,
    comparison_table,
    harvest_table,
    readme_rows,
    shapley_table,
    steps_text,
    swarm_table,
    tune_table,
)
from tables_more import BLOCKS as MORE_BLOCKS  # noqa: E402
from tables_more import readme_rows as more_readme_rows  # noqa: E402

from marljax.benchmarks import ALGOS, TASKS, results_table
from marljax.benchmarks.runner import read_state
from marljax.shell.result_files import (
    block_names,
    count,
    fill_blocks,
    iqm,
    iqm_ci,
    markdown_table,
    mean_ci,
    p_greater,
    read_results,
    stale_blocks,
    values,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "baselines", "results")
#: the stored benchmark directories (`marljax benchmark --out`), one `benchmark.json` each
BENCHMARKS = os.path.join(ROOT, "bench", "results", "benchmark")
#: the stored `tune_compare.py --json` files
TUNE = os.path.join(ROOT, "bench", "results", "tune")
#: the files whose marked tables are generated
DOCUMENTS = (
    "README.md",
    os.path.join("baselines", "README.md"),
    os.path.join("docs", "population.md"),
    os.path.join("docs", "benchmark_suite.md"),
    os.path.join("docs", "training.md"),
)
#: the punishment result files, one per parameter mode of the DQN learners
PUNISHMENT = {"shared_id": "social_punishment_iql_shared_id.json",
              "independent": "social_punishment_iql_independent.json"}  # fmt: skip
COOP, RETURN, PUNISH = "social/cooperation_rate", "return_per_round", "social/punishment_rate"
MODE_NAMES = {"shared_id": "shared (one network + agent id)", "independent": "independent"}


def _budget(data: dict, row: dict) -> str:
    steps = data["config"]["env_steps_per_seed"] * (2 if row["per_round_learner"] else 1)
    return f"{steps_text(steps)} x {len(values(row, COOP))}"


def _ci(x: np.ndarray) -> str:
    mean, low, high = mean_ci(x)
    return f"{mean:.3f} [{low:.3f}, {high:.3f}]"


def punishment_rows(results: str, family: str) -> list[tuple[str, dict, dict, np.ndarray]]:
    """`(mode, file data, row, control's cooperation)` for every condition of `family`."""
    out = []
    for mode, name in PUNISHMENT.items():
        data = read_results(os.path.join(results, name))
        rows = [r for r in data["rows"] if r["family"] == family]
        if not rows:
            raise ValueError(f"{name} has no condition of the family {family!r}")
        for r in rows:
            if r["parameter_mode"] != mode:
                raise ValueError(f"{name}: {r['condition']} ran with {r['parameter_mode']}")
            out.append((mode, data, r, values(rows[0], COOP)))
    return out


def punishment_table(results: str, family: str) -> str:
    """One family of `social_mechanisms.py --algo iql`, shared and independent DQNs."""
    header = ["Parameter mode", "Condition", "Steps x seeds", "Cooperation [95% CI]", "IQM",
              "Return per round", "Punishment rate", "Fines after CD / CC / DD / DC",
              "P(> control)"]  # fmt: skip
    body, last = [], None
    for mode, data, row, control in punishment_rows(results, family):
        coop, per_seed = values(row, COOP), row["per_seed"]
        fines = [f"punish/{k}" for k in ("CD", "CC", "DD", "DC")]
        body.append([
            MODE_NAMES[mode] if mode != last else None,
            row["condition"],
            _budget(data, row),
            _ci(coop),
            f"{iqm(coop):.3f}",
            f"{np.mean(values(row, RETURN)):.2f}",
            f"{np.mean(values(row, PUNISH)):.3f}" if PUNISH in per_seed else None,
            " / ".join(f"{np.mean(values(row, f)):.2f}" for f in fines)
            if fines[0] in per_seed else None,
            f"{p_greater(coop, control):.2f}" if row is not data_first(data, family) else None,
        ])  # fmt: skip
        last = mode
    return markdown_table(header, body)


def data_first(data: dict, family: str) -> dict:
    """The control (first condition) of `family` in a result file."""
    return next(r for r in data["rows"] if r["family"] == family)


def punishment_summary(results: str) -> str:
    """The README row's result sentence for the punishment reproduction."""

    def coop(mode: str, family: str, condition: str) -> str:
        for m, _, row, _ in punishment_rows(results, family):
            if m == mode and row["condition"] == condition:
                mean, low, high = mean_ci(values(row, COOP))
                return f"{mean:.2f} [{low:.2f}, {high:.2f}]"
        raise KeyError((mode, family, condition))

    parts = []
    for mode in PUNISHMENT:
        parts.append(
            f"{MODE_NAMES[mode]} DQNs, the paper's incentives (+2 / -10 per just / unjust fine, "
            f"T = 4): pairs {coop(mode, 'Dasgupta pairs (2)', 'direct punishment (+2 / -10)')} "
            f"vs {coop(mode, 'Dasgupta pairs (2)', 'none')} without punishment, the staged "
            "population choosing partners "
            f"{coop(mode, 'Dasgupta population, stages (4)', 'selection + punishment (+2 / -10)')}"
            f" vs {coop(mode, 'Dasgupta population, stages (4)', 'partner selection')}; a flat "
            f"cost of 1 per fine (T = 5): pairs {coop(mode, 'PD (2)', 'direct punishment')} vs "
            f"{coop(mode, 'PD (2)', 'none')}"
        )
    return "; ".join(parts)


def qtran_rows(results: str) -> tuple[dict, dict[str, dict]]:
    """The QTRAN / QMIX / VDN result file and its rows by algorithm."""
    data = read_results(os.path.join(results, "qtran_nonmonotonic.json"))
    return data, {r["algo"]: r for r in data["rows"]}


def _optimum(row: dict) -> str:
    both = (values(row, "action_0") == 0) & (values(row, "action_1") == 0)
    return count(both, lambda x: x)


def qtran_table(results: str) -> str:
    """`qtran_nonmonotonic.py`: seeds whose greedy joint action is the optimum, per learner."""
    data, rows = qtran_rows(results)
    header = ["Learner", "Parameter mode", "Env steps x seeds", "Seeds playing the optimum (0, 0)",
              "Greedy joint actions (count)", "Seed 0: agent 0's utilities Q_0(a)"]  # fmt: skip
    body = []
    for algo, row in rows.items():
        joint = zip(values(row, "action_0").astype(int), values(row, "action_1").astype(int))
        counts = collections.Counter(f"({a}, {b})" for a, b in joint)
        q = row["seed_0"]["q_row_0"]
        body.append([
            algo.upper(), row["parameter_mode"],
            f"{steps_text(data['config']['env_steps_per_seed'])} x {len(values(row, 'payoff'))}",
            _optimum(row), ", ".join(f"{k} x{n}" for k, n in counts.most_common()),
            "`[" + ", ".join(f"{v:.2f}" for v in q) + "]`",
        ])  # fmt: skip
    return markdown_table(header, body)


def _matrix(q: list) -> str:
    return "`[" + ", ".join("[" + ", ".join(f"{v:.2f}" for v in r) + "]" for r in q) + "]`"


def value_decomposition_rows(results: str, env: str) -> tuple[dict, list[dict]]:
    data = read_results(os.path.join(results, "value_decomposition_matrix.json"))
    rows = [r for r in data["rows"] if r["env"] == env]
    return data, sorted(rows, key=lambda r: ["qmix", "vdn", "iql"].index(r["algo"]))


def _to_2b(row: dict) -> str:
    first = values(row, "action_0")
    to_2b, n = int(np.sum(first == 1)), first.size
    parts = [f"{n - to_2b}/{n} go to 2A (safe, 7)", f"{to_2b}/{n} go to 2B (optimal, 8)"]
    return ", ".join(p for p in (parts if to_2b < n - to_2b else parts[::-1]) if p[0] != "0")


def value_decomposition_table(results: str, env: str) -> str:
    """`value_decomposition_matrix.py` on one game: every seed's greedy joint action."""
    _, rows = value_decomposition_rows(results, env)
    two_step = env == "matrix/two_step-v0"
    header = ["Learner", "Parameter mode", "Env steps x seeds",
              "Greedy first move" if two_step else "Greedy joint actions (count)",
              "Seed 0: Q_tot at the first state (rows: agent 0's action)"]  # fmt: skip
    body = []
    for row in rows:
        a0, a1 = values(row, "action_0").astype(int), values(row, "action_1").astype(int)
        if two_step:
            outcome = _to_2b(row)
        else:
            counts = collections.Counter(f"({a}, {b})" for a, b in zip(a0, a1))
            outcome = ", ".join(f"{k} x{n}" for k, n in counts.most_common())
            outcome += "" if "(0, 0)" in counts else ": never (0, 0)"
        body.append([
            row["algo"].upper(), row["parameter_mode"],
            f"{steps_text(row['env_steps_per_seed'])} x {a0.size}", outcome,
            _matrix(row["seed_0"]["q_tot"]) if row["algo"] != "iql" else "(no joint value)",
        ])  # fmt: skip
    return markdown_table(header, body)


#: `baseline_main` scripts: (file stem, what it shows, the verdict that counts, reference)
VERDICTS = [
    ("mappo_penalty_game", "MAPPO reaches the optimal joint action (return 10) of the penalty "
     "game k=0", "optimum reached", "Claus & Boutilier 1998"),
    ("ippo_ipd_tit_for_tat", "IPPO learns to cooperate with tit-for-tat in the 10-round "
     "repeated PD (return 30; always-defect gets 14)", "cooperates", "Axelrod 1984"),
    ("mappo_climbing", "MAPPO converges to the climbing game's 7 equilibrium, not the optimum 11 "
     "(relative overgeneralisation)", "nearest equilibrium (1, 1) = 7",
     "Claus & Boutilier 1998"),
    ("coma_penalty_game", "COMA reaches the optimal joint action (return 10) of the penalty game "
     "k=0", "optimum reached", "Foerster et al. 2018; Claus & Boutilier 1998"),
]  # fmt: skip


def verdict_row(results: str, stem: str, what: str, verdict: str) -> tuple[dict, dict, str]:
    """A `baseline_main` result file, its one row and "what: k/n seeds <verdict>"."""
    data = read_results(os.path.join(results, f"{stem}.json"))
    (row,) = data["rows"]
    final = values(row, "final_return")
    hits = count(np.array([v == verdict for v in row["verdict"]]), lambda x: x)
    train = data["config"]["train"]
    budget = f"{train['num_envs']} envs x {train['rollout_len']} steps x " + (
        f"{train['total_env_steps'] // (train['num_envs'] * train['rollout_len'])} updates"
    )
    text = (f"{what}: {hits} seeds \"{verdict}\" ({budget}; final training return "
            + ", ".join(f"{v:.2f}" for v in final) + ")")  # fmt: skip
    return data, row, text


def verdict_table(results: str) -> str:
    """The `baseline_main` scripts on matrix games, from their result files."""
    header = ["Script", "Learner", "Parameter mode", "Env steps x seeds", "Final training return",
              "Verdict (counted)"]  # fmt: skip
    body = []
    for stem, _, verdict, _ in VERDICTS:
        data, row, _ = verdict_row(results, stem, "", verdict)
        final = values(row, "final_return")
        hits = count(np.array([v == verdict for v in row["verdict"]]), lambda x: x)
        body.append([f"`{stem}.py`", row["algo"].upper(), row["parameter_mode"],
                     f"{steps_text(data['config']['train']['total_env_steps'])} x {final.size}",
                     ", ".join(f"{v:.2f}" for v in final), f"{hits} {verdict}"])  # fmt: skip
    return markdown_table(header, body)


def lola_table(results: str) -> str:
    """`lola_ipd.py`: exact LOLA vs naive learners on the IPD, per initialisation."""
    data = read_results(os.path.join(results, "lola_ipd.json"))
    states = ("start", "CC", "CD", "DC", "DD")
    header = ["Learners", "Init std", "Reward per round (mean +- std)",
              "Seeds cooperating (> -1.5)",
              "P(C \\| " + ", ".join(states) + ") (mean)"]  # fmt: skip
    body = []
    for row in data["rows"]:
        reward = values(row, "reward")
        body.append([row["method"].upper() if row["method"] == "lola" else row["method"],
                     f"{row['init_std']:g}", f"{reward.mean():.3f} +- {reward.std():.3f}",
                     count(reward, lambda x: x > -1.5),
                     ", ".join(f"{values(row, 'p_c/' + st).mean():.2f}"
                               for st in states)])  # fmt: skip
    return markdown_table(header, body)


def lola_summary(results: str) -> str:
    data = read_results(os.path.join(results, "lola_ipd.json"))
    first = data["config"]["init_std"][0]
    rows = {r["method"]: r for r in data["rows"] if r["init_std"] == first}
    lola, naive = values(rows["lola"], "reward"), values(rows["naive"], "reward")
    p = [f"{values(rows['lola'], 'p_c/' + st).mean():.2f}" for st in ("CC", "CD", "DC", "DD")]
    return (f"exact LOLA on the IPD ({data['config']['updates']} updates, init std {first:g}): "
            f"{count(lola, lambda x: x > -1.5)} seeds cooperate (reward per round "
            f"{lola.mean():.2f}, tit-for-tat-like P(C \\| CC, CD, DC, DD) = {', '.join(p)}); "
            f"naive learners defect in {count(naive, lambda x: x <= -1.5)} "
            f"({naive.mean():.2f})")  # fmt: skip


#: PSRO meta-solvers in the order of docs/population.md, with their labels there
SOLVERS = {"nash": "`nash`", "prd": "`prd`", "rae": "`rae` (`lambda = 1`, `epsilon = 0.1`)",
           "alpharank": "`alpharank`", "uniform": "`uniform` (fictitious play)",
           "last": "`last` (self-play)"}  # fmt: skip


def psro_nash_conv(results: str, env: str) -> dict[str, dict]:
    data = read_results(os.path.join(results, "psro_nashconv.json"))
    return {r["meta_solver"]: r for r in data["rows"] if r["env"] == env}


def psro_table(results: str, env: str) -> str:
    """`psro_nashconv.py`: NashConv of the meta-strategy, mean over seeds, at sizes K."""
    rows = psro_nash_conv(results, env)
    marks = (1, 4, 8, 16)
    header = ["meta-solver", *(f"K={k}" for k in marks)]
    body = [[label, *(f"{values(rows[s], f'nash_conv/K={k}').mean():.3f}" for k in marks)]
            for s, label in SOLVERS.items()]  # fmt: skip
    return markdown_table(header, body)


def psro_summary(results: str) -> str:
    rows = psro_nash_conv(results, "matrix/rps-v0")
    at = lambda s, k: f"{values(rows[s], f'nash_conv/K={k}').mean():.3f}"  # noqa: E731
    n = len(values(rows["nash"], "nash_conv/K=1"))
    return (f"PSRO on RPS ({n} seeds, exact best responses): the Nash meta-solver's NashConv "
            f"falls from {at('nash', 1)} to {at('nash', 8)} by 8 policies, fictitious play "
            f"(uniform) to {at('uniform', 16)} at 16, self-play stays at "
            f"{at('last', 16)}")  # fmt: skip


#: the league result files of `league_rrps.py`, by rounds per episode
LEAGUE = {1: "league_rrps1.json", 10: "league_rrps10.json"}
LEAGUE_RULES = {"self": "naive self-play", "pfsp": "PFSP", "psro": "PSRO (Nash)",
                "uniform": "fictitious self-play (uniform)"}  # fmt: skip


def _iqm_ci(x: np.ndarray) -> str:
    point, low, high = iqm_ci(x)
    return f"{point:.3f} [{low:.3f}, {high:.3f}]"


def league_rows(results: str, rounds: int) -> tuple[dict, list[dict], int]:
    """`(file data, rows, last generation)` of a `league_rrps.py` result file."""
    data = read_results(os.path.join(results, LEAGUE[rounds]))
    rows = data["rows"]
    last = max(int(k.split("/")[1]) for k in rows[0]["per_seed"] if k.startswith("exploit"))
    return data, rows, last


def league_table(results: str, rounds: int) -> str:
    """Exploitability (IQM [95% CI] over seeds) at the first and last generation, per rule."""
    data, rows, last = league_rows(results, rounds)
    header = ["rule", "newest snapshot, gen 1", f"newest snapshot, gen {last}",
              "Nash mixture, gen 1", f"Nash mixture, gen {last}",
              "newer loses to older"]  # fmt: skip
    body = []
    for row in rows:
        get = lambda kind, g: values(row, f"exploitability_{kind}/{g}")  # noqa: E731, B023
        body.append([LEAGUE_RULES[row["rule"]], _iqm_ci(get("latest", 1)),
                     _iqm_ci(get("latest", last)), _iqm_ci(get("nash", 1)),
                     _iqm_ci(get("nash", last)),
                     f"{np.mean(values(row, 'cycling')):.2f}"])  # fmt: skip
    return markdown_table(header, body)


def league_summary(results: str) -> str:
    """The README row's sentence for the league measurement."""
    parts = []
    for rounds in LEAGUE:
        _, rows, last = league_rows(results, rounds)
        by = {r["rule"]: r for r in rows}

        def at(rule, kind, by=by, last=last):
            first = iqm(values(by[rule], f"exploitability_{kind}/1"))
            end = iqm(values(by[rule], f"exploitability_{kind}/{last}"))
            return f"{first:.2f} -> {end:.2f}"

        n = len(values(rows[0], "cycling"))
        cycle = ", ".join(f"{LEAGUE_RULES[r['rule']].split(' (')[0]} "
                          f"{np.mean(values(r, 'cycling')):.2f}" for r in rows)  # fmt: skip
        game = "one-shot RPS" if rounds == 1 else f"repeated RPS ({rounds} rounds)"
        parts.append(
            f"{game}, {n} seeds, exploitability from generation 1 to {last}: naive self-play's "
            f"newest policy {at('self', 'latest')}; the Nash mixture of the snapshots, "
            f"self-play {at('self', 'nash')}, PFSP {at('pfsp', 'nash')}, PSRO "
            f"{at('psro', 'nash')}; newer snapshot loses to older: {cycle}"
        )
    return "; ".join(parts) + " (IQM; best-response win rate minus 1/2)"


#: the rows of `league_smax.py`'s table: (metric, row team, opponent, sides)
SMAX_ROWS = (
    ("league_vs_heuristic_team", "league team", "heuristic-trained team", "drawn per episode"),
    ("heuristic_team_vs_league", "heuristic-trained team", "league team", "drawn per episode"),
    ("league_vs_heuristic_team_as_allies", "league team", "heuristic-trained team", "row on allies"),
    ("heuristic_team_vs_league_as_allies", "heuristic-trained team", "league team", "row on allies"),
    ("league_vs_league", "league team", "league team", "drawn per episode"),
    ("heuristic_team_vs_heuristic_team", "heuristic-trained team", "heuristic-trained team",
     "drawn per episode"),
    ("heuristic_team_vs_heuristic_enemy", "heuristic-trained team", "JaxMARL's heuristic enemy",
     "allies (battle won)"),
    ("league_vs_heuristic_enemy", "league team", "JaxMARL's heuristic enemy",
     "allies (battle won)"),
)  # fmt: skip


def league_smax_table(results: str) -> str:
    """Cross-play of the league-trained and the heuristic-trained SMAX 3m teams."""
    row = read_results(os.path.join(results, "league_smax.json"))["rows"][0]
    header = ["team", "against", "sides", "win rate, mean [95% CI]", "seeds"]
    body = [[team, other, sides, _ci(values(row, m)), str(len(values(row, m)))]
            for m, team, other, sides in SMAX_ROWS]  # fmt: skip
    return markdown_table(header, body)


def league_smax_summary(results: str) -> str:
    row = read_results(os.path.join(results, "league_smax.json"))["rows"][0]
    at = lambda m: "{:.2f} [{:.2f}, {:.2f}]".format(*mean_ci(values(row, m)))  # noqa: E731
    return (f"SMAX 3m, MAPPO, 491,520 env steps x {len(values(row, 'league_vs_league'))} seeds: "
            f"the league-trained team beats the team trained on the heuristic enemy in "
            f"cross-play {at('league_vs_heuristic_team')} of the time (sides drawn per episode), "
            f"while against JaxMARL's heuristic enemy it wins {at('league_vs_heuristic_enemy')} "
            f"of its battles and the heuristic-trained team "
            f"{at('heuristic_team_vs_heuristic_enemy')}")  # fmt: skip


def league_tag_table(results: str) -> str:
    """Two-population leagues on MPE simple tag: cross-play and exploitability by generation."""
    rows = read_results(os.path.join(results, "league_tag.json"))["rows"]
    last = max(int(k.split("/")[1]) for k in rows[0]["per_seed"] if k.startswith("tags/"))
    header = ["rule", "tags: adv. 0 vs good 0", f"adv. {last} vs good 0",
              f"adv. {last} vs good {last}", f"adv. 0 vs good {last}",
              "escape vs adv. Nash, gen 0", f"gen {last}", "catch vs good Nash, gen 0",
              f"gen {last}", "seeds"]  # fmt: skip
    body = []
    for row in rows:
        get = lambda k: _iqm_ci(values(row, k))  # noqa: E731, B023
        body.append([LEAGUE_RULES[row["rule"]], get("tags/0/0"), get(f"tags/{last}/0"),
                     get(f"tags/{last}/{last}"), get(f"tags/0/{last}"),
                     get("adversaries_nash/0"), get(f"adversaries_nash/{last}"),
                     get("good_nash/0"), get(f"good_nash/{last}"),
                     str(len(values(row, "tags/0/0")))])  # fmt: skip
    return markdown_table(header, body)


#: `coplayer_pool_ipd.py`'s result files, in table order
COPLAYER = ("coplayer_pool_ipd_gru", "coplayer_pool_ipd_mlp", "coplayer_pool_ipd_mixed50_gru",
            "coplayer_pool_ipd_mixed50_mlp", "coplayer_pool_ipd_m1_gru",
            "coplayer_pool_ipd_mixed50_m1_gru", "coplayer_pool_ipd_mixed50_m1_mlp",
            "coplayer_pool_ipd_mixed50_gru_6000", "coplayer_pool_ipd_mixed50_m1_gru_6000")  # fmt: skip
COPLAYER_VS = (("always_cooperate", "always-C"), ("always_defect", "always-D"),
               ("tit_for_tat", "TFT"), ("grim_trigger", "grim"), ("win_stay_lose_shift", "WSLS"),
               ("random", "random"))  # fmt: skip


def coplayer_table(results: str) -> str:
    """Reward per round of the co-player-pool learners against each strategy and each other."""
    header = ["policy", "co-players in training", "updates",
              *(f"vs {label}" for _, label in COPLAYER_VS),
              "cross-play, different seeds [95% CI]", "pairs >= 2.5", "same seed twice",
              "seeds"]  # fmt: skip
    body = []
    for name in COPLAYER:
        path = os.path.join(results, name + ".json")
        if not os.path.exists(path):
            continue
        data = read_results(path)
        row = data["rows"][0]
        table = np.asarray(row["table"])
        off = ~np.eye(len(table), dtype=bool)
        kind, names = row["pool"], data["config"]["pool"]
        what = ("a random memory-one policy" if names == ["random_memory_one"]
                else f"the {len(names)} strategies")  # fmt: skip
        pool = what if kind == "fixed" else f"itself ({1 - float(kind.split()[1]):.0%}) or {what}"
        body.append([row["policy"], pool, str(data["config"]["updates"]),
                     *(f"{np.mean(values(row, 'vs/' + n)):.2f}" for n, _ in COPLAYER_VS),
                     _ci(values(row, "crossplay")), f"{np.mean(table[off] >= 2.5):.0%}",
                     f"{np.mean(np.diag(table)):.2f}", str(len(table))])  # fmt: skip
    return markdown_table(header, body)


def bn_tabular_table(results: str) -> str:
    """Tabular BN policy gradient on the coordination games, per number of agents and graph."""
    data = read_results(os.path.join(results, "bn_tabular_coordination.json"))
    header = ["n", "graph", "payoff, mean [95% CI]", "price of anarchy, mean [95% CI]",
              "PoA IQM", "Nash gap, mean (max)", "seeds at an optimum"]  # fmt: skip
    body = []
    for row in data["rows"]:
        gap, opt = values(row, "nash_gap"), values(row, "at_optimum")
        body.append([str(row["agents"]), row["graph"], _ci(values(row, "payoff")),
                     _ci(values(row, "price_of_anarchy")),
                     f"{iqm(values(row, 'price_of_anarchy')):.3f}",
                     f"{np.mean(gap):.4f} ({np.max(gap):.4f})",
                     f"{int(opt.sum())}/{len(opt)}"])  # fmt: skip
    return markdown_table(header, body)


def bn_tabular_summary(results: str) -> str:
    rows = read_results(os.path.join(results, "bn_tabular_coordination.json"))["rows"]
    by = {(r["agents"], r["graph"]): r for r in rows}
    poa = lambda n, g: f"{np.mean(values(by[(n, g)], 'price_of_anarchy')):.2f}"  # noqa: E731
    opt = lambda n, g: f"{np.mean(values(by[(n, g)], 'at_optimum')):.2f}"  # noqa: E731
    return (f"tabular BN policy gradient with exact gradients ({len(values(rows[0], 'payoff'))} "
            f"seeds): conditioning on parents' actions cuts the price of anarchy on a 3-agent "
            f"coordination game from {poa(3, 'empty')} (empty graph) to {poa(3, 'line')} (line) "
            f"and raises the share of seeds at an optimum from {opt(3, 'empty')} to "
            f"{opt(3, 'line')}; with 5 agents every graph mostly ends at the safe equilibrium "
            f"(price of anarchy {poa(5, 'empty')} / {poa(5, 'line')} / {poa(5, 'full')})")  # fmt: skip


def _ratio(x: float) -> str:
    return f"{x:,.0f}" if x >= 10 else f"{x:.2g}"


def rae_rows(results: str) -> list[tuple[str, dict]]:
    """`(setting, {solver: row})` of `rae_crash.py`'s two result files, one per game each."""
    out = []
    for stem, populations in (("rae_crash", "two populations"),
                              ("rae_crash_symmetric", "one shared population")):  # fmt: skip
        rows = read_results(os.path.join(results, stem + ".json"))["rows"]
        for game in dict.fromkeys(r["game"] for r in rows):
            out.append(
                (f"{game}, {populations}", {r["solver"]: r for r in rows if r["game"] == game})
            )
    return out


def rae_table(results: str) -> str:
    """Crash probability of PSRO's final meta-mixtures: the RAE against the best baseline."""
    header = ["setting", "best baseline: P(crash)", "RAE `lambda = 1`: P(crash)",
              "ratio [95% CI]", "payoff given up", "RAE `lambda = 0.1`: ratio [95% CI]"]  # fmt: skip
    body = []
    for setting, by in rae_rows(results):
        rae, small = by["rae lambda=1"], by["rae lambda=0.1"]
        best = by[rae["best_baseline"]]
        crash = lambda r: f"{np.mean(values(r, 'crash')):.1e}"  # noqa: E731
        ratio = lambda r: "{} [{}, {}]".format(*map(_ratio, r["ratio_to_best_baseline"]))  # noqa: E731
        given = np.mean(values(best, "payoff")) - np.mean(values(rae, "payoff"))
        body.append([setting, f"{rae['best_baseline']} {crash(best)}", crash(rae), ratio(rae),
                     f"{given:.2f}" + (" (the RAE earns more)" if given < 0 else ""),
                     ratio(small)])  # fmt: skip
    return markdown_table(header, body)


def rae_summary(results: str) -> str:
    """The README row's sentence for `rae_crash.py`."""
    by = dict(rae_rows(results))
    r = lambda setting: by[setting]["rae lambda=1"]["ratio_to_best_baseline"][0]  # noqa: E731
    held = sum(r(setting) > 1 for setting in by)
    seeds = len(values(by["chicken, two populations"]["rae lambda=1"], "crash"))
    return (f"PSRO with the risk-averse-equilibrium meta-solver (`lambda = 1`) in crash games "
            f"({seeds} seeds): {_ratio(r('chicken, two populations'))}x fewer crashes than the "
            f"best baseline in chicken with a population per driver and "
            f"{_ratio(r('crossing, one shared population'))}-"
            f"{_ratio(r('chicken, one shared population'))}x fewer with one shared population, "
            f"but {_ratio(1 / r('crossing, two populations'))}x more in a 3-speed crossing game "
            f"with two populations: the paper's direction in {held} of {len(by)} settings, not "
            f"its 7x")  # fmt: skip


def reproduced_table(results: str) -> str:
    """The README's rows whose numbers come from stored result files."""
    header = ["script", "parameter mode", "result (generated from `baselines/results/`)",
              "reference"]  # fmt: skip
    data = read_results(os.path.join(results, PUNISHMENT["shared_id"]))
    steps = steps_text(data["config"]["env_steps_per_seed"])
    rows = []
    for stem, what, verdict, reference in VERDICTS:
        _, row, text = verdict_row(results, stem, what, verdict)
        rows.append([f"`python baselines/{stem}.py --results baselines/results/{stem}.json`",
                     row["parameter_mode"], text, reference])  # fmt: skip
    rows += [[
        "`python baselines/social_mechanisms.py --algo iql --only \"PD (2),stages,Dasgupta pairs\""
        f" --seeds {data['config']['seeds']} --steps {data['config']['env_steps_per_seed']} "
        "--parameter-mode shared_id` (and `independent`)",
        "shared_id and independent (both run)",
        f"cooperation of greedy DQNs ({steps} env steps x {data['config']['seeds']} seeds per "
        f"condition, mean [95% CI]): {punishment_summary(results)}",
        "Dasgupta & Musolesi 2025",
    ]]  # fmt: skip
    _, two = value_decomposition_rows(results, "matrix/two_step-v0")
    _, mono = value_decomposition_rows(results, "matrix/nonmonotonic-v0")
    by = lambda rows, a: next(r for r in rows if r["algo"] == a)  # noqa: E731
    optimal = lambda r: count(values(r, "action_0") == 1, lambda x: x)  # noqa: E731
    safe = lambda r: count(values(r, "action_0") == 0, lambda x: x)  # noqa: E731
    joint = lambda r: values(r, "action_0") * 3 + values(r, "action_1")  # noqa: E731
    at_optimum = lambda r: count(joint(r) == 0, lambda x: x)  # noqa: E731
    rows.append([
        "`python baselines/value_decomposition_matrix.py --results "
        "baselines/results/value_decomposition_matrix.json`",
        ", ".join(sorted({r["parameter_mode"] for r in two + mono})),
        f"two-step game: QMIX learns the optimal policy worth 8 ({optimal(by(two, 'qmix'))} "
        f"seeds), VDN settles for 7 ({safe(by(two, 'vdn'))} seeds); non-monotonic game: the "
        f"optimum 8 in {at_optimum(by(mono, 'qmix'))} seeds for QMIX, "
        f"{at_optimum(by(mono, 'vdn'))} for VDN (uniformly random data)",
        "Rashid et al. 2018; Son et al. 2019; Rashid et al. 2020",
    ])  # fmt: skip
    rows.append(["`python baselines/lola_ipd.py --init-std 1 0.1 --results "
                 "baselines/results/lola_ipd.json`", "one policy per agent (exact gradients)",
                 lola_summary(results), "Foerster et al. 2018"])  # fmt: skip
    rows.append(["`python baselines/psro_nashconv.py --results "
                 "baselines/results/psro_nashconv.json`",
                 "one population per player (exact best responses)", psro_summary(results),
                 "Lanctot et al. 2017"])  # fmt: skip
    rows.append(["`python baselines/league_rrps.py --rules self,pfsp,psro,uniform --rounds 1 "
                 "--updates 400 --interval 50 --br-updates 100 --results "
                 "baselines/results/league_rrps1.json` (and `--rounds 10 --updates 200 "
                 "--interval 40 --br-updates 60`, `league_rrps10.json`)",
                 "shared_id (one learner plays both seats)", league_summary(results),
                 "Lanctot et al. 2017; Vinyals et al. 2019"])  # fmt: skip
    rows.append(["`python baselines/league_smax.py --heuristic-run RUN --seeds 5 --results "
                 "baselines/results/league_smax.json` (RUN: `marljax benchmark --tasks smax/3m "
                 "--algos mappo --budget cpu`'s cell)", "shared (one network for a team)",
                 league_smax_summary(results), "Vinyals et al. 2019; Rutherford et al. 2024"])  # fmt: skip
    tag = read_results(os.path.join(results, "league_tag.json"))
    by = {r["rule"]: r for r in tag["rows"]}
    last = max(int(k.split("/")[1]) for k in tag["rows"][0]["per_seed"] if k.startswith("tags/"))
    at = lambda rule, k: f"{iqm(values(by[rule], k)):.2f}"  # noqa: E731
    rows.append([
        "`python baselines/league_tag.py --results baselines/results/league_tag.json`",
        "shared within each team (one network per team)",
        f"two-population leagues on MPE simple tag (IPPO, {tag['config']['updates']} updates x "
        f"{tag['config']['num_envs'] * tag['config']['rollout_len']:,} env steps, "
        f"{tag['config']['seeds']} seeds per rule): the final adversaries tag the initial good "
        f"agent {at('self', f'tags/{last}/0')} (self-play) / {at('pfsp', f'tags/{last}/0')} "
        f"(PFSP) times per episode against the initial adversaries' {at('self', 'tags/0/0')}; a "
        f"best-responding good agent escapes the adversaries' Nash mixture "
        f"{at('self', 'adversaries_nash/0')} -> {at('self', f'adversaries_nash/{last}')} "
        f"(self-play) and -> {at('pfsp', f'adversaries_nash/{last}')} (PFSP) over the "
        "generations (IQM)",
        "Lowe et al. 2017; Vinyals et al. 2019",
    ])  # fmt: skip
    cp = {}
    for name in COPLAYER:
        path = os.path.join(results, name + ".json")
        if os.path.exists(path):
            cp[name] = read_results(path)["rows"][0]
    pairs = lambda n: np.mean(  # noqa: E731
        np.asarray(cp[n]["table"])[~np.eye(len(cp[n]["table"]), dtype=bool)] >= 2.5
    )
    cross = lambda n: f"{np.mean(values(cp[n], 'crossplay')):.2f}"  # noqa: E731
    rows.append([
        "`python baselines/coplayer_pool_ipd.py --mixed 0.5 --results "
        "baselines/results/coplayer_pool_ipd_mixed50_gru.json` (and the other pools, "
        "docs/population.md)",
        "one learner (IPPO, GRU 32)",
        f"in-context co-player inference, 10-round IPD, 8 seeds: trained against the six "
        f"named strategies, seeds cross-play at {cross('coplayer_pool_ipd_gru')} per round "
        f"({pairs('coplayer_pool_ipd_gru'):.0%} of pairs cooperate); against a mixed pool "
        f"(itself half the time) {cross('coplayer_pool_ipd_mixed50_gru')} "
        f"({pairs('coplayer_pool_ipd_mixed50_gru'):.0%}); with random memory-one co-players, "
        f"mixed or not, {cross('coplayer_pool_ipd_mixed50_m1_gru')}: **not reproduced** at "
        "this budget (mutual cooperation 3, defection 1)",
        "Weis et al. 2026",
    ])  # fmt: skip
    rows.append(["`python baselines/bn_tabular_coordination.py --results "
                 "baselines/results/bn_tabular_coordination.json`",
                 "tabular, one table per agent", bn_tabular_summary(results),
                 "Chen et al. 2023 (trend; not the paper's game)"])  # fmt: skip
    rows.append(["`python baselines/rae_crash.py --results baselines/results/rae_crash.json` "
                 "(and `--symmetric`, `rae_crash_symmetric.json`)",
                 "one population per driver, or one shared (`--symmetric`)",
                 rae_summary(results), "Slumbers et al. 2023"])  # fmt: skip
    qdata, q = qtran_rows(results)
    rows.append([
        "`python baselines/qtran_nonmonotonic.py --results "
        "baselines/results/qtran_nonmonotonic.json`",
        ", ".join(sorted({r["parameter_mode"] for r in q.values()})),
        f"non-monotonic game ({steps_text(qdata['config']['env_steps_per_seed'])} env steps of "
        f"uniformly random data): QTRAN's agents play the optimum 8 in {_optimum(q['qtran'])} "
        f"seeds, QMIX in {_optimum(q['qmix'])} and VDN in {_optimum(q['vdn'])} (same learner, "
        "data and budget)",
        "Son et al. 2019",
    ])  # fmt: skip
    rows += readme_rows(results, TUNE) + more_readme_rows(results)
    return markdown_table(header, rows)


def benchmark_table(benchmarks: str = BENCHMARKS) -> str:
    """Every finished cell of the stored benchmark directories, in the suite's task order
    (ablations, run with `--set` overrides, are not the suite's cells and are left out)."""
    cells = {}
    for name in sorted(os.listdir(benchmarks)):
        path = os.path.join(benchmarks, name)
        if os.path.exists(os.path.join(path, "benchmark.json")):
            state = read_state(path)
            if not state["plan"].get("overrides"):
                cells.update(state["cells"])
    tasks, algos = list(TASKS), list(ALGOS)
    order = sorted(
        cells, key=lambda c: (tasks.index(c.split(":")[0]), algos.index(c.split(":")[1]))
    )
    return results_table({"cells": {c: cells[c] for c in order}})


def generate(results: str = RESULTS, benchmarks: str = BENCHMARKS) -> dict[str, str]:
    """Every table's markdown, by marker name, from the result files in `results`."""
    return {
        "benchmark": benchmark_table(benchmarks),
        "reproduced": reproduced_table(results),
        "punishment-paper": punishment_table(results, "Dasgupta pairs (2)"),
        "punishment-paper-population": punishment_table(results, "Dasgupta population, stages (4)"),
        "punishment-pd2": punishment_table(results, "PD (2)"),
        "punishment-staged": punishment_table(results, "PD population, stages (4)"),
        "qtran": qtran_table(results),
        "matrix-verdicts": verdict_table(results),
        "lola": lola_table(results),
        "psro-rps": psro_table(results, "matrix/rps-v0"),
        "psro-matching-pennies": psro_table(results, "matrix/matching_pennies-v0"),
        "league-rrps10": league_table(results, 10),
        "league-rrps1": league_table(results, 1),
        "league-smax": league_smax_table(results),
        "league-tag": league_tag_table(results),
        "coplayer-ipd": coplayer_table(results),
        "bn-tabular": bn_tabular_table(results),
        "rae-crash": rae_table(results),
        "shapley": shapley_table(results),
        "tune-compare": tune_table(TUNE),
        "swarm-vicsek": swarm_table(results, "swarm/vicsek-v0"),
        "swarm-kuramoto": swarm_table(results, "swarm/kuramoto-v0"),
        "bn-mappo": bn_mappo_table(results),
        "transf-qmix": comparison_table(
            results, "transf_qmix_spread", "greedy_team_return", "qmix"
        ),
        "exploration-collapse": collapse_table(results),
        "harvest-iql": harvest_table(results, "iql"),
        "harvest-ippo": harvest_table(results, "ippo"),
        "maddpg-train": comparison_table(results, "maddpg_spread", "train", "mappo"),
        "maddpg-greedy": comparison_table(results, "maddpg_spread", "greedy", "mappo"),
        "facmac-train": comparison_table(results, "facmac_spread", "train", "mappo"),
        "facmac-greedy": comparison_table(results, "facmac_spread", "greedy", "mappo"),
        "hasac-train": comparison_table(results, "hasac_speaker_listener", "train", "masac"),
        "hasac-greedy": comparison_table(results, "hasac_speaker_listener", "greedy", "masac"),
        "lbf-qmix-iql": comparison_table(results, "lbf_qmix_iql", "final_team_return", "iql"),
        "shaq-matrix": comparison_table(
            results, "shaq_vdn_qmix", "greedy_payoff", "shaq", task="matrix"
        ),
        "shaq-spread": comparison_table(
            results, "shaq_vdn_qmix", "team_return_last10", "shaq", task="spread"
        ),
        "value-decomposition-two-step": value_decomposition_table(results, "matrix/two_step-v0"),
        "value-decomposition-nonmonotonic": value_decomposition_table(
            results, "matrix/nonmonotonic-v0"
        ),
        **{name: table(results) for name, table in MORE_BLOCKS.items()},
    }


def stale(
    results: str = RESULTS, root: str = ROOT, benchmarks: str = BENCHMARKS
) -> dict[str, list[str]]:
    """Per document, the marked tables whose committed text differs from the data's."""
    blocks = generate(results, benchmarks)
    out, placed = {}, set()
    for doc in DOCUMENTS:
        with open(os.path.join(root, doc)) as f:
            text = f.read()
        placed.update(block_names(text))
        names = stale_blocks(text, blocks)
        if names:
            out[doc] = names
    unplaced = sorted(set(blocks) - placed)
    if unplaced:
        out["(no marker in any document)"] = unplaced
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale tables")
    args = parser.parse_args(argv)
    if args.check:
        found = stale()
        for doc, names in found.items():
            print(f"{doc}: stale tables {names}: run python baselines/tables.py", file=sys.stderr)
        return 1 if found else 0
    blocks = generate()
    for doc in DOCUMENTS:
        path = os.path.join(ROOT, doc)
        with open(path) as f:
            text = f.read()
        new = fill_blocks(text, blocks)
        if new != text:
            with open(path, "w") as f:
                f.write(new)
            print(f"rewrote {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
