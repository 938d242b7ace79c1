"""League training against plain self-play of the same agent: env steps/s, side by side.

The same IPPO learner (recurrent, GRU 64, shared parameters) on the same env and batch, three
ways, each one compiled training program (compile timed apart):

- `self-play`: plain training (`make_train` on the two-player env, one network for both seats),
  the reference;
- `league self`: `make_league` with rule `self` (team 1 is the current learner; the pool is
  kept and snapshots taken, never played);
- `league pfsp K`: `make_league` with PFSP over a pool of `K` snapshots (team 1 computed for
  every snapshot and the learner, then selected per env).

Envs: repeated RPS (`matrix/rrps-v0`, 10 rounds; the network dominates the step), the Coin
Game (`social/coin_game-v0`; the env weighs more) and MPE simple tag (`particle/simple_tag-v0`,
three adversaries and a good agent: a two-population league, one learner per team, each on half
of the envs against the other's snapshots; `self-play` there is plain IPPO of all four agents
with one shared network). Ratios are against `self-play`.

    python bench/bench_league.py                    # 64 envs, 200 updates of 10 steps
    python bench/bench_league.py --cases league-two # simple tag only
    python bench/bench_league.py --quick            # smoke test
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Options, Result, case, main, marljax_training  # noqa: E402

import marljax  # noqa: E402
from marljax.agents import algo_spec  # noqa: E402
from marljax.population.league import (  # noqa: E402
    LeagueConfig,
    TeamView,
    league_populations,
    make_league,
)
from marljax.training.train import TrainConfig, make_train  # noqa: E402

ENVS = (
    ("matrix/rrps-v0", {"num_rounds": 10}),
    ("social/coin_game-v0", {}),
    ("particle/simple_tag-v0", {}),
)
AGENT = {"gru_size": 64, "hidden_sizes": (64,)}


def _setup(opts: Options, env_id: str, kwargs: dict):
    num_envs = opts.num_envs[0] if opts.num_envs else (8 if opts.quick else 64)
    updates = 5 if opts.quick else 200
    env, params = marljax.make(env_id, **kwargs)
    spec = algo_spec("ippo")
    config = spec.config_cls(**{**spec.config_defaults, **AGENT})
    train = TrainConfig(num_envs=num_envs, rollout_len=10, total_env_steps=num_envs * 10 * updates)
    return env, params, spec, config, train


def _league_rows(opts: Options, envs) -> list[Result]:
    out = []
    for env_id, kwargs in envs:
        env, params, spec, config, train = _setup(opts, env_id, kwargs)
        plain = spec.factory(config, env, params)
        task = f"IPPO {env_id}, {train.num_envs} envs"
        out += marljax_training(make_train(train, env, plain, params), plain.default_hparams(),
                                task, framework="self-play")  # fmt: skip
        populations, teams = league_populations(env, LeagueConfig())
        learners = tuple(spec.factory(config, TeamView(env, t), params) for t in teams)
        learner = learners if populations == 2 else learners[0]
        for rule, capacity in (("self", 8), ("pfsp", 4), ("pfsp", 8)):
            lc = LeagueConfig(rule=rule, capacity=capacity, snapshot_interval=10,
                              num_envs=train.num_envs)  # fmt: skip
            agent = make_league(learner, env, lc)
            name = f"league {rule}" + (f" K={capacity}" if rule != "self" else "")
            out += marljax_training(make_train(train, env, agent, params),
                                    agent.default_hparams(), task, framework=name)  # fmt: skip
    return out


@case("league")
def league(opts: Options) -> list[Result]:
    """One learner against its snapshots: repeated RPS and the Coin Game."""
    return _league_rows(opts, ENVS[:2])


@case("league-two")
def league_two(opts: Options) -> list[Result]:
    """One learner per team (two populations): MPE simple tag."""
    return _league_rows(opts, ENVS[2:])


if __name__ == "__main__":
    main(["league", "league-two"], __doc__.splitlines()[0], baseline="self-play", repeats=1,
         first_call=False)  # fmt: skip
