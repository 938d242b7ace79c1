"""HASAC: training throughput against MAPPO on one env, and compile time vs number of agents.

1. Training env-steps/s of HASAC (`marljax.agents.sac`, sequential update) and MAPPO
   (`marljax.agents.ppo`, tanh-squashed Gaussian) on continuous simple spread
   (`particle/simple_spread_continuous-v0`, 3 agents), same env batch (8) and rollout (25),
   measured in one process as fused training programs, compile apart from run. HASAC starts
   learning at once (no warm-up) so every update pays its gradient steps: batch 256, one gradient
   step per vectorised env step (HARL's `update_per_train = 1`), MLP (64, 64) for both.
   Off-policy and on-policy learners do different amounts of work per env step by design; the
   ratio is what a user pays per env step with these settings, not an implementation-quality
   comparison. Where HASAC's time goes: `masac` (simultaneous actor update), `hasac_harl_ratio`
   (HARL's 0.05 gradient steps per transition: 20 envs x 1 step per vector step, here
   `utd_ratio = 8 / 20`), `hasac_critic_only` (the actors never step after the first gradient
   step) and `hasac_rollout_only` (warm-up never ends: acting, env steps and replay writes only).
   `mappo_paper_mpe`: MAPPO at its paper's MPE setting (Yu et al. 2022: 128 envs, 10 epochs of
   one minibatch), which does 2.5x the learner work per env step of `mappo` (4 epochs).
2. Compile time (`jax.jit(agent.update).lower(...)` + `.compile()`, wall seconds) of ONE
   learner update (replay add of an 8 x 25 rollout + 25 gradient steps, batch 64) on simple
   spread with A = 2, 4, 8, 16 agents (and as many landmarks), for HASAC and, for contrast,
   MASAC (simultaneous update, agents `vmap`ped). HASAC's sequential update is a `lax.scan` over
   the agent permutation, so its program (and its compile time) should stay roughly flat in A;
   the table prints each compile time relative to A = 2 and the StableHLO size as a
   machine-independent check (it grows only through the array shapes, not the op count).
3. Floating-point work per env step (XLA's cost analysis of the compiled programs, so the same on
   every machine) of MAPPO (marljax's defaults and its paper's MPE setting) and of HASAC at
   HARL's update ratio, and the env-steps/s ratio the two
   would have at equal FLOP throughput. MAPPO: one epoch's update per transition (the slope
   between rollouts of 25 and 50 steps, so the rollout's loop body, counted once by XLA, cancels)
   times `num_epochs`. HASAC: (critic step + MASAC's actor step) per gradient step, times the
   gradient steps per env step; MASAC's actor step computes every agent's loss and gradient
   without a loop (XLA counts a loop body once), so it is a lower bound of HASAC's, which adds one
   actor forward pass per agent to re-sample its new action.

    python bench/bench_hasac.py [--quick] [--json PATH]
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
from harness import Options, Result, case, compile_table, main, timed, xla_flops

import marljax
from marljax.agents.base import Observation, Trajectory
from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
from marljax.agents.sac import SACConfig, SACHParams, make_sac
from marljax.agents.sac import agent as sac_agent
from marljax.agents.sac.networks import make_sac_model
from marljax.nn.replay import make_replay
from marljax.training.train import TrainConfig, make_train

ENV = "particle/simple_spread_continuous-v0"
NUM_ENVS, ROLLOUT = 8, 25
HASAC = SACConfig(hidden_sizes=(64, 64), batch_size=256, buffer_size=20_000, warmup_steps=0)
MAPPO = PPOConfig(critic_input="global", hidden_sizes=(64, 64), tanh_squash=True)
AGENT_COUNTS = (2, 4, 8, 16)


def _task(updates: int) -> str:
    return f"train simple_spread_continuous (A=3, T={ROLLOUT}, {updates} updates)"


#: MAPPO at the setting of its paper for MPE (Yu et al. 2022, the `train_mpe.sh` of its code:
#: 128 rollout threads x 25 steps, 10 PPO epochs of one minibatch, hidden size 64): `PPOConfig`
#: overrides and its number of envs.
MAPPO_PAPER = ({"num_epochs": 10, "num_minibatches": 1}, 128)

#: Variants of the throughput case: `SACConfig` overrides for HASAC, or `("ppo", PPOConfig
#: overrides, num_envs)` for MAPPO. The last three split the time of `hasac`: rollout and replay
#: only (learning never starts), the critic alone (the actors step once, at the first gradient
#: step), and HARL's published update ratio.
VARIANTS = {
    "mappo": ("ppo", {}, NUM_ENVS),
    "mappo_paper_mpe": ("ppo", *MAPPO_PAPER),
    "hasac": {},
    "masac": {"sequential": False},
    "hasac_harl_ratio": {"utd_ratio": NUM_ENVS / 20},
    "hasac_critic_only": {"policy_delay": 1_000_000},
    "hasac_rollout_only": {"warmup_steps": 10**9},
}


def _throughput(name: str, opts: Options) -> list[Result]:
    updates = 4 if opts.quick else 40
    env, params = marljax.make(ENV)
    variant, num_envs = VARIANTS[name], NUM_ENVS
    if isinstance(variant, tuple):
        _, overrides, num_envs = variant
        agent = make_ppo(dataclasses.replace(MAPPO, **overrides), env, params)
        hp = PPOHParams()
    else:
        agent = make_sac(dataclasses.replace(HASAC, **variant), env, params)
        hp = SACHParams()
    cfg = TrainConfig(num_envs, ROLLOUT, num_envs * ROLLOUT * updates)
    trainer = make_train(cfg, env, agent, params)
    t = timed(
        trainer.train, jax.random.PRNGKey(0), hp, repeats=opts.repeats, first_call=opts.first_call
    )
    steps = cfg.num_updates * cfg.steps_per_update
    return [t.result(_task(updates), name, steps, notes={"num_envs": num_envs})]


for _name in VARIANTS:
    case(f"hasac_train/{_name}")(functools.partial(_throughput, _name))


def _zero_trajectory(env, params, T: int, E: int) -> Trajectory:
    """A `[T, E]` trajectory of zeros with `env`'s shapes (compile-time input of `update`)."""
    A = env.num_agents
    obs_shape = env.observation_space(params).shape
    state_shape = env.global_state_space(params).shape
    act_shape = env.action_space(params).shape
    z = jnp.zeros

    def observation(*lead):
        return Observation(
            z((*lead, A, *obs_shape)), z((*lead, A, 0), bool), z((*lead, *state_shape)),
            z(lead, bool),
        )  # fmt: skip

    return Trajectory(
        observation=observation(T, E),
        actions=z((T, E, A, *act_shape)),
        reward=z((T, E, A)),
        terminated=z((T, E), bool),
        truncated=z((T, E), bool),
        next_obs=z((T, E, A, *obs_shape)),
        next_global_state=z((T, E, *state_shape)),
        next_action_mask=z((T, E, A, 0), bool),
        policy_info={},
        last_observation=observation(E),
        initial_carry=(),
    )


@case("hasac_compile/agents")
def compile_vs_agents(opts: Options) -> list[Result]:
    """Compile (lower + XLA) of ONE `agent.update` (replay add + 25 gradient steps) per A."""
    out = []
    for A in AGENT_COUNTS[:2] if opts.quick else AGENT_COUNTS:
        env, params = marljax.make(ENV, num_agents=A, num_landmarks=A)
        traj = _zero_trajectory(env, params, ROLLOUT, NUM_ENVS)
        key, hp = jax.random.PRNGKey(0), SACHParams()
        for name, sequential in (("hasac", True), ("masac", False)):
            cfg = SACConfig(
                hidden_sizes=(64, 64),
                batch_size=64,
                buffer_size=1000,
                warmup_steps=0,
                sequential=sequential,
            )
            agent = make_sac(cfg, env, params)
            state = agent.init(key, hp)
            chars = len(jax.jit(agent.update).lower(state, traj, hp, key).as_text())
            t = timed(agent.update, state, traj, hp, key, repeats=1, first_call=False)
            out.append(
                t.result(
                    "SAC update: replay add + 25 gradient steps (compile vs agents)",
                    name,
                    NUM_ENVS * ROLLOUT,
                    variant=f"A={A}",
                    notes={"stablehlo_chars": chars, "agents": A},
                )
            )
    return out


@case("hasac_flops/per_env_step")
def flops_per_env_step(opts: Options) -> list[Result]:
    """MFLOP per env step of MAPPO and of HASAC at HARL's ratio (see the module docstring)."""
    del opts
    env, params = marljax.make(ENV)
    key = jax.random.PRNGKey(0)

    def mappo_train_flops(T: int) -> float:
        cfg = dataclasses.replace(MAPPO, num_epochs=1, num_minibatches=1)
        trainer = make_train(
            TrainConfig(NUM_ENVS, T, NUM_ENVS * T), env, make_ppo(cfg, env, params), params
        )
        return xla_flops(trainer.train, key, PPOHParams())

    per_epoch = (mappo_train_flops(2 * ROLLOUT) - mappo_train_flops(ROLLOUT)) / (NUM_ENVS * ROLLOUT)
    mappo = MAPPO.num_epochs * per_epoch
    mappo_paper = MAPPO_PAPER[0]["num_epochs"] * per_epoch

    cfg = dataclasses.replace(HASAC, **VARIANTS["hasac_harl_ratio"])
    model = make_sac_model(cfg, env, params)
    masac = make_sac_model(dataclasses.replace(cfg, sequential=False), env, params)
    hp, replay = SACHParams(), make_replay(cfg.buffer_size, cfg.batch_size)
    state = sac_agent.init(sac_agent.SACParts(model, replay), key, hp).replace(replay=None)
    batch = jax.tree.map(
        lambda x: jnp.zeros((cfg.batch_size, *x.shape), x.dtype), model.example_item()
    )
    critic = xla_flops(
        lambda s, b, k: sac_agent.critic_step(model, s, b, hp, k, None), state, batch, key
    )
    actor = xla_flops(
        lambda s, b, k: sac_agent.actor_step(masac, s, b, hp, k, None), state, batch, key
    )
    steps_per_env_step = max(1, round(cfg.utd_ratio * ROLLOUT)) / (NUM_ENVS * ROLLOUT)
    hasac = (critic + actor) * steps_per_env_step
    task = "FLOPs per env step (XLA cost analysis)"
    return [
        Result(
            task, "mappo", float("nan"), float("nan"), 1, notes={"mflop_per_env_step": mappo / 1e6}
        ),
        Result(
            task,
            "mappo_paper_mpe",
            float("nan"),
            float("nan"),
            1,
            notes={"mflop_per_env_step": mappo_paper / 1e6},
        ),
        Result(
            task,
            "hasac_harl_ratio",
            float("nan"),
            float("nan"),
            1,
            notes={
                "mflop_per_env_step": hasac / 1e6,
                "mflop_per_gradient_step": (critic + actor) / 1e6,
                "critic_mflop": critic / 1e6,
                "actor_mflop_lower_bound": actor / 1e6,
            },
        ),
    ]


def _flops_table(results: list[Result]) -> str:
    rows = {r.framework: r.notes for r in results if r.task.startswith("FLOPs per env step")}
    if not {"mappo", "mappo_paper_mpe", "hasac_harl_ratio"} <= set(rows):
        return ""
    m, p = rows["mappo"]["mflop_per_env_step"], rows["mappo_paper_mpe"]["mflop_per_env_step"]
    h = rows["hasac_harl_ratio"]["mflop_per_env_step"]
    epochs = MAPPO_PAPER[0]["num_epochs"]
    return "\n".join(
        [
            "",
            "| learner | MFLOP per env step | HASAC's env steps/s ratio to it at equal FLOP/s |",
            "|---|---:|---:|",
            f"| mappo ({MAPPO.num_epochs} epochs x {MAPPO.num_minibatches} minibatches) | {m:.2f} "
            f"| {m / h:.2f}x |",
            f"| mappo_paper_mpe ({epochs} epochs x 1 minibatch) | {p:.2f} | {p / h:.2f}x |",
            f"| hasac_harl_ratio (at least) | {h:.2f} | 1.00x |",
        ]
    )


if __name__ == "__main__":
    main(
        [
            *(f"hasac_train/{n}" for n in VARIANTS),
            "hasac_compile/agents",
            "hasac_flops/per_env_step",
        ],
        __doc__.splitlines()[0],
        baseline="mappo",
        after=lambda results: (
            compile_table(results, "SAC update", "update") + _flops_table(results)
        ),
        repeats=3,
        first_call=False,
    )
