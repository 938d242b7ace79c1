"""IQL, VDN and QMIX on the QMIX two-step game and the non-monotonic one-step game: learned tables.

- Two-step game (T. Rashid et al., "QMIX: Monotonic Value Function Factorisation for Deep
  Multi-Agent Reinforcement Learning", ICML 2018, section 6.1 and its table of learned Q_tot):
  QMIX learns the optimal joint policy worth 8 (agent 0 moves to state 2B, then both play 1),
  while VDN's additive values cannot represent state 2B and settle for the safe 7 (state 2A).
- Non-monotonic game [[8, -12, -12], [-12, 0, 0], [-12, 0, 0]] (K. Son et al., "QTRAN", ICML 2019;
  T. Rashid et al., "Weighted QMIX", NeurIPS 2020): trained on uniform data, QMIX and VDN do not
  recover the optimum 8 and settle on a joint action of the zero block.

Data are collected with uniform random actions (epsilon = 1), as in those papers' illustrations;
every seed of one algorithm trains in one compiled program. The script prints the learned per-agent
Q values and the Q_tot table of seed 0 and the greedy outcome of every seed.

    python baselines/value_decomposition_matrix.py [--seeds 8] [--out runs]
        [--results baselines/results/value_decomposition_matrix.json]
"""

import argparse
import collections

import jax
import jax.numpy as jnp
import numpy as np

from marljax.agents.base import Observation
from marljax.agents.qlearning import first_step_q_table, format_q_table, q_table
from marljax.shell.experiment import Experiment, build, run_experiment
from marljax.shell.result_files import write_results
from marljax.training.train import TrainConfig

AGENT = {
    "recurrent": False,
    "hidden_sizes": (32,),
    "batch_size": 32,
    "buffer_size": 500,
    "target": "one_step",
    "target_update_interval": 50,
}
HPARAMS = {"lr": 5e-3, "gamma": 1.0, "eps_start": 1.0, "eps_finish": 1.0}
GAMES = {
    # env id: (episode length, updates)
    "matrix/two_step-v0": (2, 600),
    "matrix/nonmonotonic-v0": (1, 300),
}


def second_state(built, action0: int) -> Observation:
    """The observation of state 2A (agent 0 played 0) or 2B (played 1) of the two-step game."""
    s0, _ = built.env.reset(jax.random.PRNGKey(0), built.env_params)
    _, ts = built.env.step(jax.random.PRNGKey(1), s0, jnp.array([action0, 0]), built.env_params)
    return Observation(ts.obs, ts.action_mask, ts.global_state, jnp.array(False))


def run(env_id: str, algo: str, seeds: int, out: str) -> dict:
    """Train `seeds` seeds of `algo` on `env_id` in one program; print the learned tables.
    Returns the result row: per seed, the greedy first joint action of `Q_tot`."""
    length, updates = GAMES[env_id]
    exp = Experiment(
        algo=algo,
        env=env_id,
        seeds=seeds,
        train=TrainConfig(num_envs=8, rollout_len=length, total_env_steps=8 * length * updates),
        agent={**AGENT, "sequence_len": length},
        hparams=HPARAMS,
        out_dir=out,
        checkpoint=False,
    )
    result = run_experiment(exp, progress=False)
    built = build(exp)
    outcomes = collections.Counter()
    per_seed: dict[str, list] = {"action_0": [], "action_1": []}
    for s in range(seeds):
        state = jax.tree.map(lambda x, s=s: x[0, s], result.state.agent_state)
        table = first_step_q_table(built.agent_config, built.env, state, built.env_params)
        greedy = np.unravel_index(np.argmax(table["q_tot"]), table["q_tot"].shape)
        per_seed["action_0"].append(int(greedy[0]))
        per_seed["action_1"].append(int(greedy[1]))
        if s == 0:
            seed0 = {"q_tot": np.asarray(table["q_tot"]).tolist()}
            print(f"\n=== {algo} on {env_id}, seed 0 ({result.run_dir})")
            print(format_q_table(table))
            if env_id == "matrix/two_step-v0":
                obs = second_state(built, 1)
                print("state 2B:")
                print(format_q_table(q_table(built.agent_config, built.env, state, obs)))
        if env_id == "matrix/two_step-v0":
            outcomes["state 2B (optimal, 8)" if greedy[0] == 1 else "state 2A (safe, 7)"] += 1
        else:
            outcomes[f"joint action {tuple(int(g) for g in greedy)}"] += 1
    print(f"{algo} greedy outcome over {seeds} seeds: {dict(outcomes)}")
    return {"env": env_id, "algo": algo, "parameter_mode": built.agent_config.parameter_mode,
            "env_steps_per_seed": exp.train.total_env_steps, "seed_0": seed0,
            "per_seed": per_seed}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8, help="seeds per algorithm")
    parser.add_argument("--out", default="runs", help="parent folder of the run directories")
    parser.add_argument("--results", default=None, help="write the per-seed outcomes here (JSON)")
    args = parser.parse_args(argv)
    rows = [run(env_id, algo, args.seeds, args.out)
            for env_id in GAMES for algo in ("iql", "vdn", "qmix")]  # fmt: skip
    if args.results:
        config = {"agent": AGENT, "hparams": HPARAMS, "seeds": args.seeds, "num_envs": 8,
                  "games": {k: {"episode_len": n, "updates": u}
                            for k, (n, u) in GAMES.items()}}  # fmt: skip
        write_results(args.results, "baselines/value_decomposition_matrix.py", config, rows, argv)


if __name__ == "__main__":
    main()
