"""PQN-VDN on MPE simple spread with JaxMARL's published configuration (the `jaxmarl` preset).

PQN (M. Gallici et al., "Simplifying Deep Temporal Difference Learning", ICLR 2025) with VDN as in
JaxMARL (A. Rutherford et al., "JaxMARL", NeurIPS 2024, `baselines/QLearning/pqn_vdn_ff.py` and
`config/alg/pqn_vdn_ff_mpe.yaml`): 256 envs x 16 steps per update, no replay buffer, no target
network, layer-normalised 2x256 Q-network, Q(lambda = 0.3) targets, epsilon 1 -> 0.1 over 10% of
the run. The default budget is a quarter of the config's 2M steps (`--steps` to change it).

    python baselines/pqn_vdn_spread.py [--seeds 2] [--steps 491520] [--out runs]
        [--results baselines/results/pqn_vdn_spread.json]  (per-seed team returns, JSON)
"""

import argparse

import numpy as np

from marljax.shell.experiment import Experiment, build, final_returns, run_experiment
from marljax.shell.result_files import write_results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2, help="seeds, trained in one program")
    parser.add_argument("--steps", type=int, default=491_520, help="env steps per seed")
    parser.add_argument("--out", default="runs", help="parent folder of the run directory")
    parser.add_argument("--results", help="write the per-seed team returns here (JSON)")
    args = parser.parse_args(argv)
    exp = Experiment(
        algo="pqn_vdn",
        preset="jaxmarl",
        env="particle/simple_spread-v0",
        seeds=args.seeds,
        # the preset's 256 envs x 16 steps; returns of the training episodes, no greedy evaluation
        train={"total_env_steps": args.steps, "eval_interval": 0},
        hparams={"eps_anneal_steps": 0.1 * args.steps},
        out_dir=args.out,
        checkpoint=False,
    )
    result = run_experiment(exp)
    # team return (sum over the 3 agents) of the training episodes of the first 10 updates
    first = np.nanmean(np.asarray(result.metrics["episode_return"])[0, :, :10], axis=-1) * 3
    final = final_returns(result.metrics)[0] * 3
    for s in range(args.seeds):
        print(
            f"seed {s}: team return {first[s]:.2f} (first 10 updates) -> {final[s]:.2f} (last update)"
        )
    print(f"run directory: {result.run_dir}")
    if args.results:
        mode = build(exp).agent_config.parameter_mode
        rows = [{"algo": "pqn_vdn", "parameter_mode": mode,
                 "per_seed": {"team_return_first10": first, "team_return_final": final}}]  # fmt: skip
        write_results(args.results, "baselines/pqn_vdn_spread.py", exp.to_dict(), rows)


if __name__ == "__main__":
    main()
