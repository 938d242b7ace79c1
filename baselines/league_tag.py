"""Two-population leagues on MPE simple tag: both teams learn, each against the other's snapshots.

MPE simple tag (`particle/simple_tag-v0`: three slow adversaries chase one fast good agent among
two obstacles, 25 steps) is asymmetric, so a league trains one learner per team
(`marljax.population.league_two`, chosen by `marljax train --league RULE` on this env): IPPO
with shared feed-forward networks (64 x 64), 16 envs of which each learner plays 8, a snapshot
of both learners every `--interval` updates (a generation). Per rule and seed, after training:

- cross-play between the generations (`league_crossplay`): tags per episode of adversary
  generation `g` against good-agent generation `h` (the adversaries' summed return over 30,
  MPE's 10 per tag to each of three adversaries);
- approximate exploitability per generation (`exploitability_curve` with the other population
  as the frozen pool): a fresh adversary team trained against the good agent's newest snapshot
  and against its Nash mixture over the generations so far (`generation_targets`), its catch
  rate (episodes with a tag or the good agent off the arena); and a fresh good agent against the
  adversaries', its escape rate (the episodes without). Lower is less exploitable.

    python baselines/league_tag.py [--rules self,pfsp] [--seeds 5] [--updates 300]
        [--interval 60] [--br-updates 100] [--results baselines/results/league_tag.json]
"""

import argparse

import jax
import jax.numpy as jnp
import numpy as np

from marljax.population.league_eval import (
    exploitability_curve,
    generation_targets,
    league_crossplay,
)
from marljax.shell.build import league_learners
from marljax.shell.experiment import Experiment, build, run_experiment
from marljax.shell.result_files import iqm, mean_ci, write_results
from marljax.training.train import TrainConfig

ENV, NUM_ENVS, STEPS, TAG = "particle/simple_tag-v0", 16, 25, 30.0
AGENT = {"recurrent": False, "hidden_sizes": (64, 64)}


def run_rule(rule: str, args) -> dict:
    """Train `args.seeds` two-population leagues of `rule`; cross-play and exploitability."""
    capacity = args.updates // args.interval + 1
    exp = Experiment(
        algo="ippo", env=ENV, seeds=args.seeds,
        train=TrainConfig(num_envs=NUM_ENVS, rollout_len=STEPS,
                          total_env_steps=NUM_ENVS * STEPS * args.updates),
        agent=AGENT, league={"rule": rule, "capacity": capacity, "snapshot_interval": args.interval},
        out_dir=args.out, name=f"league_tag_{rule}", checkpoint=False,
    )  # fmt: skip
    result = run_experiment(exp, progress=False)
    built = build(exp)
    env, params = built.env, built.env_params
    learners = league_learners(exp, env, params)
    state = jax.tree.map(lambda x: x[0], result.state.agent_state)  # [S, ...] (one setting)
    s0, s1 = state.sides
    play = league_crossplay(learners, state, env, params, jax.random.PRNGKey(1000), env.teams,
                            num_envs=64, num_steps=STEPS)  # fmt: skip
    targets = jax.vmap(lambda w, a, b: generation_targets(w, a, age_1=b))(
        play["win_rate"], s0.age, s1.age
    )
    br = TrainConfig(num_envs=NUM_ENVS, rollout_len=STEPS,
                     total_env_steps=NUM_ENVS * STEPS * args.br_updates)  # fmt: skip
    out = {}
    for p, name in ((0, "adversaries"), (1, "good")):  # exploit population p's generations
        weights = jnp.concatenate([targets[f"latest_{p}"], targets[f"nash_{p}"]], axis=1)
        pool = state.sides[p].pool
        c = exploitability_curve(learners[1 - p], env, params, pool, weights, br,
                                 jax.random.PRNGKey(2000 + p), opponent=learners[p],
                                 side=1 - p)[:, 0]  # fmt: skip
        # the responder's win rate (draws 1/2) - 1/2: adversaries win an episode with a tag
        # (or the good agent off the arena), else draw, so catch = 2 c, escape = 1 + 2 c
        rate = 2.0 * c if p == 1 else 1.0 + 2.0 * c
        out[f"{name}_latest"], out[f"{name}_nash"] = rate[:, :capacity], rate[:, capacity:]
    order = [np.argsort(np.asarray(a), axis=-1) for a in (s0.age, s1.age)]
    tags = np.asarray(play["return"]) / TAG  # [S, K, K]
    out["tags"] = np.stack(
        [tags[s][np.ix_(order[0][s], order[1][s])] for s in range(args.seeds)]
    )  # [S, generation of the adversaries, generation of the good agent]
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", default="self,pfsp")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--updates", type=int, default=300)
    parser.add_argument("--interval", type=int, default=60)
    parser.add_argument("--br-updates", type=int, default=100)
    parser.add_argument("--out", default="runs")
    parser.add_argument("--results", default=None, help="write the per-seed outcomes here (JSON)")
    args = parser.parse_args(argv)
    rows = []
    for rule in args.rules.split(","):
        out = run_rule(rule, args)
        tags = out["tags"]
        per_seed = {
            f"tags/{g}/{h}": tags[:, g, h]
            for g in range(tags.shape[1])
            for h in range(tags.shape[2])
        }
        for key in ("adversaries_latest", "adversaries_nash", "good_latest", "good_nash"):
            for g in range(out[key].shape[1]):
                per_seed[f"{key}/{g}"] = out[key][:, g]
        rows.append({"rule": rule, "per_seed": per_seed})
        last = tags.shape[1] - 1
        for what, x in (("tags, adversaries 0 vs good 0", tags[:, 0, 0]),
                        ("tags, adversaries last vs good 0", tags[:, last, 0]),
                        ("tags, adversaries last vs good last", tags[:, last, last]),
                        ("tags, adversaries 0 vs good last", tags[:, 0, last])):  # fmt: skip
            print(f"{rule:>6} {what}: IQM {iqm(x):.3f} {mean_ci(x)[1:]}")
        for key, what in (("adversaries", "escape rate of a good-agent best response"),
                          ("good", "catch rate of an adversary best response")):  # fmt: skip
            for kind in ("latest", "nash"):
                x = out[f"{key}_{kind}"]
                print(f"{rule:>6} {what} vs {key} {kind}: gen 0 IQM {iqm(x[:, 0]):.3f} -> "
                      f"gen {x.shape[1] - 1} IQM {iqm(x[:, -1]):.3f} {mean_ci(x[:, -1])[1:]}")  # fmt: skip
    if args.results:
        config = {"env": ENV, "algo": "ippo", "agent": AGENT, "num_envs": NUM_ENVS,
                  "rollout_len": STEPS, "updates": args.updates, "interval": args.interval,
                  "br_updates": args.br_updates, "seeds": args.seeds}  # fmt: skip
        write_results(args.results, "baselines/league_tag.py", config, rows, argv)


if __name__ == "__main__":
    main()
