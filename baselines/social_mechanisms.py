"""Punishment, reputation and partner selection vs no mechanism: cooperation over seeds.

The direction check of "Investigating the Impact of Direct Punishment on the Emergence of
Cooperation in Multi-Agent Reinforcement Learning Systems" (Dasgupta & Musolesi, AAMAS journal
2025): learners that can punish defectors (directly, or as third parties), see reputations, or
choose their partners should cooperate more than the same learners without the mechanism.
Each condition trains all seeds in one program with IPPO (or independent DQN, `--algo iql`) and
evaluates the trained policies with `marljax.evaluation.social`: cooperation rate (share of
contributions of at least half the endowment, or of cooperative moves in the Prisoner's
Dilemma), the players' return per round (punishment costs and fines included; public goods: 10
if nobody contributes, 16 if everyone contributes everything; PD population: 2 x 1 mutual
defection to 2 x 3 mutual cooperation, per game an agent is in; Coin Game: +1 per pickup,
-2 per own coin taken by the partner) and the punishment rate. Every mechanism is compared with its own control (same players, same rounds):

- public goods, 4 players, 10 rounds: none / direct punishment (two stages per round: contribute,
  see, punish; cost 1, fine 3) / reputation;
- public goods, 3 players, 10 rounds: none / one third-party punisher (two stages);
- repeated Prisoner's Dilemma, 2 players, 20 rounds (the paper's game): none / direct
  punishment (two stages per round: move, see both moves, punish; cost 1, fine 3) / the same
  two-stage rounds with cost and fine 0 (a placebo: the structure without the punishment); and
  both two-stage conditions again with the learner counted in rounds (`PER_ROUND`);
- Prisoner's Dilemma population of 4, 20 rounds: random partners (choice masked) / partner
  selection / partner selection with reputation;
- the same population with the paper's rounds in stages (`social/ipd_staged-v0`,
  `social/ipd_staged_punishment-v0`): choose a partner, play one PD move with it, and (with
  punishment) see both moves and punish (cost 1, fine 3): random partners / partner selection /
  random partners + punishment / selection + punishment / selection + punishment + reputation;
- the same mechanisms in a gridworld, the Coin Game (egocentric 3x3 views; cooperation = own-coin
  pickups): two players, 50 steps, none / direct punishment / one third-party punisher /
  reputation (punishment decided each step beside the move; return per round = per step); and a
  population of 4 playing it in pairs, 4 rounds of a choice step then 16 steps
  (`social/coin_game_partner_selection-v0`): random partners / partner selection / selection
  with reputation (return per round = 16 Coin Game steps).

- the punishment paper's incentives (`incentives="dasgupta"`, from the authors' released code:
  PD with T = 4; a fine costs its target 3 and pays the punisher +2 if the target defected, -10
  if it cooperated; `"dasgupta_costly"`: -3 and -10): DQN pairs (none / direct punishment /
  costly punishment / two stages without fines) and the staged population choosing partners
  (selection / selection + punishment / selection + costly punishment), `--only Dasgupta`.

`--parameter-mode independent` gives every agent its own network (the default is the learner's:
one network with an agent id for IQL, `shared_id`); `--results FILE` writes every condition's
per-seed metrics with the configuration (`marljax.shell.result_files`), from which
`baselines/tables.py` generates the README tables.

    python baselines/social_mechanisms.py [--algo ippo|iql] [--seeds 32] [--steps 60000]
        [--only FAMILIES] [--parameter-mode MODE] [--results FILE]
"""

import argparse
import time

import jax
import numpy as np

import marljax.envs.social  # noqa: F401  (registers social/*)
from marljax.agents.base import Observation
from marljax.evaluation.rollout import evaluate_policy
from marljax.evaluation.social import SocialMetrics, bootstrap_ci
from marljax.shell.experiment import Experiment, build, run_experiment
from marljax.shell.result_files import p_greater, write_results
from marljax.training.train import TrainConfig

#: (family, condition, env id, env options, rounds per episode); the first condition of a family
#: is its control; the first `P` agents are the players (P in the family's name)
PG4, PG3, PD2, PD4 = "public goods (4)", "public goods (3)", "PD (2)", "PD population (4)"
PD4S = "PD population, stages (4)"
CG2, CG4 = "Coin Game (2)", "Coin Game population (4)"
#: the placebo of direct punishment: the same two-stage rounds, but punishing costs and fines 0
NO_FINES = {"punish_cost": 0.0, "punish_fine": 0.0}
NO_FINES_NAME = "two stages, no fines"
#: the same two conditions with the learner counted in rounds as in the one-stage control: a
#: two-stage round is two env steps, so these get twice the env steps, exploration schedule,
#: replay buffer and sequence length, and the square root of the control's per-step discount
PUNISH_PER_ROUND, NO_FINES_PER_ROUND = "punishment, per round", "no fines, per round"
PER_ROUND = (PUNISH_PER_ROUND, NO_FINES_PER_ROUND)
RANDOM, REP = {"random_partners": True}, {"reputation": True}
#: the paper's incentives (`marljax.envs.social.INCENTIVES`): pairs, and the staged population
DG2, DG4 = "Dasgupta pairs (2)", "Dasgupta population, stages (4)"
PAPER, COSTLY = {"incentives": "dasgupta"}, {"incentives": "dasgupta_costly"}
PAPER_NO_FINES = {**PAPER, **NO_FINES, "unjust_cost": 0.0}
CONDITIONS = [
    (PG4, "none", "social/public_goods-v0", {}, 10),
    (PG4, "direct punishment", "social/public_goods_punishment_2stage-v0", {}, 10),
    (PG4, "reputation", "social/public_goods_reputation-v0", {}, 10),
    (PG3, "none", "social/public_goods-v0", {"num_agents": 3}, 10),
    (PG3, "third-party punishment", "social/public_goods_third_party_2stage-v0", {}, 10),
    (PD2, "none", "social/ipd-v0", {}, 20),
    (PD2, "direct punishment", "social/ipd_punishment_2stage-v0", {}, 20),
    (PD2, NO_FINES_NAME, "social/ipd_punishment_2stage-v0", NO_FINES, 20),
    (PD2, PUNISH_PER_ROUND, "social/ipd_punishment_2stage-v0", {}, 20),
    (PD2, NO_FINES_PER_ROUND, "social/ipd_punishment_2stage-v0", NO_FINES, 20),
    (PD4, "random partners", "social/ipd_partner_selection-v0", {"random_partners": True}, 20),
    (PD4, "partner selection", "social/ipd_partner_selection-v0", {}, 20),
    (PD4, "selection + reputation", "social/ipd_partner_reputation-v0", {}, 20),
    (PD4S, "random partners", "social/ipd_staged-v0", {"random_partners": True}, 20),
    (PD4S, "partner selection", "social/ipd_staged-v0", {}, 20),
    (PD4S, "random partners + punishment", "social/ipd_staged_punishment-v0", RANDOM, 20),
    (PD4S, "selection + punishment", "social/ipd_staged_punishment-v0", {}, 20),
    (PD4S, "selection + punish. + reputation", "social/ipd_staged_punishment-v0", REP, 20),
    (CG2, "none", "social/coin_game-v0", {"egocentric": True}, 50),
    (CG2, "direct punishment", "social/coin_game_punishment-v0", {}, 50),
    (CG2, "third-party punishment", "social/coin_game_third_party-v0", {}, 50),
    (CG2, "reputation", "social/coin_game_reputation-v0", {}, 50),
    (CG4, "random partners", "social/coin_game_partner_selection-v0", {"random_partners": True}, 4),
    (CG4, "partner selection", "social/coin_game_partner_selection-v0", {}, 4),
    (CG4, "selection + reputation", "social/coin_game_partner_reputation-v0", {}, 4),
    (DG2, "none", "social/ipd-v0", PAPER, 20),
    (DG2, "direct punishment (+2 / -10)", "social/ipd_punishment_2stage-v0", PAPER, 20),
    (DG2, "costly punishment (-3 / -10)", "social/ipd_punishment_2stage-v0", COSTLY, 20),
    (DG2, NO_FINES_NAME, "social/ipd_punishment_2stage-v0", PAPER_NO_FINES, 20),
    (DG4, "partner selection", "social/ipd_staged-v0", PAPER, 20),
    (DG4, "selection + punishment (+2 / -10)", "social/ipd_staged_punishment-v0", PAPER, 20),
    (DG4, "selection + costly punishment", "social/ipd_staged_punishment-v0", COSTLY, 20),
]

#: per algorithm: (static agent settings, traced hparams)
SETTINGS = {
    "ippo": ({"hidden_sizes": (64,), "num_minibatches": 2}, {"lr": 1e-3, "ent_coef": 0.02}),
    "iql": (
        {
            "recurrent": False,
            "hidden_sizes": (64,),
            "sequence_len": 10,
            "batch_size": 64,
            "buffer_size": 5000,
            "target": "one_step",
            "target_update_interval": 100,
        },
        {"lr": 1e-3, "eps_anneal_steps": 20_000.0, "eps_finish": 0.05},
    ),
}


def run_condition(
    algo: str,
    env_id: str,
    options: dict,
    seeds: int,
    steps: int,
    out: str,
    key: jax.Array,
    per_round: bool = False,
    parameter_mode: str | None = None,
) -> dict[str, np.ndarray]:
    """Train `seeds` runs in one program; the trained policies' social metrics per seed.
    `per_round`: two env steps per round, learner scaled to match (`PER_ROUND`);
    `parameter_mode`: the learner's (default: its own default)."""
    agent, hparams = SETTINGS[algo]
    if parameter_mode is not None:
        agent = {**agent, "parameter_mode": parameter_mode}
    if per_round:
        steps *= 2
        hparams = {**hparams, "gamma": 0.99**0.5}
        if "eps_anneal_steps" in hparams:
            hparams["eps_anneal_steps"] *= 2
        for field in ("sequence_len", "buffer_size"):
            if field in agent:
                agent = {**agent, field: 2 * agent[field]}
    exp = Experiment(
        algo=algo,
        env=env_id,
        env_kwargs=options,
        seeds=seeds,
        train=TrainConfig(num_envs=16, rollout_len=20, total_env_steps=steps),
        agent=agent,
        hparams=hparams,
        out_dir=out,
        checkpoint=False,
    )
    built = build(exp)
    result = run_experiment(built, progress=False)
    hparams = jax.tree.map(lambda x: x[0], built.hparams)
    agent_states = jax.tree.map(lambda x: x[0], result.state.agent_state)  # [S, ...]

    def evaluate(agent_state, k):
        return evaluate_policy(
            built.env, built.env_params, built.agent, agent_state, hparams, k,
            wrap=SocialMetrics, greedy=algo == "iql", num_steps=200,
        )  # fmt: skip

    metrics = jax.jit(jax.vmap(evaluate))(agent_states, jax.random.split(key, seeds))
    out = {k: np.asarray(v) for k, v in metrics.items()}
    out["parameter_mode"] = built.agent_config.parameter_mode
    if env_id == "social/ipd_punishment_2stage-v0":
        out.update(punishment_response(built, agent_states, hparams, key))
    return out


def punishment_response(built, agent_states, hparams, key) -> dict[str, np.ndarray]:
    """Off the equilibrium path: whom the trained players punish after each first-round outcome.

    For every joint move of round 1 (C = 0, D = 1), the players are put on the punishment step
    that follows it and act greedily; `punish/<mine><theirs>` `[S]` is the fraction of the two
    seats that fine the other, e.g. `punish/CD`: a cooperator whose partner defected.
    """
    env, params, agent = built.env, built.env_params, built.agent
    K = env.num_choices  # targets: the other player, or nobody (= 2)

    def fines(agent_state, moves):  # [2] whether each seat fines the other after `moves`
        state, _ = env.reset(key, params)
        _, ts = env.step(key, state, moves * K + 2, params)  # now on the punishment step
        obs = Observation(ts.obs[None], ts.action_mask[None], ts.global_state[None],
                          np.zeros((1,), bool))  # fmt: skip
        actions, _, _ = agent.act(agent_state, agent.initial_carry(1), obs, key, hparams,
                                  greedy=True)  # fmt: skip
        return actions[0] % K == np.array([1, 0])

    probe = jax.jit(jax.vmap(fines, in_axes=(0, None)))
    out = {}
    for mine, theirs in [(0, 1), (0, 0), (1, 1), (1, 0)]:  # seat 0, then seat 1, makes `mine`
        seat0 = probe(agent_states, np.array([mine, theirs]))[:, 0]
        seat1 = probe(agent_states, np.array([theirs, mine]))[:, 1]
        out[f"punish/{'CD'[mine]}{'CD'[theirs]}"] = (np.asarray(seat0, np.float32) + seat1) / 2
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", default="ippo", choices=sorted(SETTINGS), help="learner")
    parser.add_argument("--seeds", type=int, default=32, help="seeds per condition")
    parser.add_argument("--steps", type=int, default=60_000, help="env steps per seed")
    parser.add_argument("--only", default="", help="comma-separated families to run (substring)")
    parser.add_argument("--out", default="runs", help="parent folder of the run directories")
    parser.add_argument(
        "--parameter-mode",
        default=None,
        choices=["shared", "shared_id", "independent"],
        help="the learner's parameter sharing (default: the learner's default)",
    )
    parser.add_argument("--results", default=None,
                        help="write every condition's per-seed metrics here (JSON)")  # fmt: skip
    args = parser.parse_args(argv)
    key = jax.random.PRNGKey(2026)
    control: dict[str, np.ndarray] = {}
    rates: dict[tuple[str, str], np.ndarray] = {}
    rows: list[dict] = []
    print(f"{args.algo}, {args.seeds} seeds x {args.steps} env steps per condition")
    for family, name, env_id, options, rounds in CONDITIONS:
        if args.only and not any(s and s in family for s in args.only.split(",")):
            continue
        start = time.perf_counter()
        m = run_condition(
            args.algo, env_id, options, args.seeds, args.steps, args.out, key, name in PER_ROUND,
            args.parameter_mode,
        )  # fmt: skip
        mode = m.pop("parameter_mode")
        rate = m["social/cooperation_rate"]
        mean, low, high = bootstrap_ci(key, rate)
        players = int(family.split("(")[1][0])
        per_round = m["episode_return_per_agent"][:, :players].mean(-1) / rounds  # [S]
        _, low_r, high_r = bootstrap_ci(key, per_round)
        line = (
            f"{family:>18} | {name:<24} cooperation {mean:.3f} [{low:.3f}, {high:.3f}]"
            f"  return/round {np.mean(per_round):6.2f} [{low_r:.2f}, {high_r:.2f}]"
        )
        if "social/punishment_rate" in m:
            line += f"  punishment rate {np.mean(m['social/punishment_rate']):.3f}"
        punish = {k.split("/")[1]: float(np.mean(v)) for k, v in m.items() if "punish/" in k}
        if punish:
            line += "  fines after round 1 (mine, theirs): " + ", ".join(
                f"{k} {v:.2f}" for k, v in punish.items()
            )
        if family in control:
            line += f"  P(> control) {p_greater(rate, control[family]):.2f}"
        else:
            control[family] = rate
        print(line, flush=True)
        rates[family, name] = rate
        per_seed = {k: v for k, v in m.items() if np.ndim(v) == 1}
        per_seed["return_per_round"] = per_round
        rows.append({"family": family, "condition": name, "env": env_id, "env_kwargs": options,
                     "rounds": rounds, "players": players, "parameter_mode": mode,
                     "per_round_learner": name in PER_ROUND,
                     "seconds": round(time.perf_counter() - start, 1),
                     "per_seed": per_seed})  # fmt: skip
    if args.results:
        agent, hparams = SETTINGS[args.algo]
        config = {"algo": args.algo, "parameter_mode": args.parameter_mode, "agent": agent,
                  "hparams": hparams, "seeds": args.seeds, "env_steps_per_seed": args.steps,
                  "num_envs": 16, "rollout_len": 20, "eval": {"num_steps": 200,
                  "greedy": args.algo == "iql"}, "key": 2026}  # fmt: skip
        write_results(args.results, "baselines/social_mechanisms.py", config, rows, argv)
    for punish, placebo in [("direct punishment", NO_FINES_NAME), PER_ROUND]:
        if (PD2, punish) in rates and (PD2, placebo) in rates:
            p = p_greater(rates[PD2, punish], rates[PD2, placebo])
            print(f"{PD2:>18} | P({punish} > {placebo}) {p:.2f}")


if __name__ == "__main__":
    main()
