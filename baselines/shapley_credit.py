"""Shapley credit of agents on a particle world and a social dilemma, exact and Monte Carlo.

Runs `marljax.evaluation.shapley` (Heuillet, Couthouis and Diaz-Rodriguez, "Collective eXplainable
AI: Explaining cooperative strategies and agent contribution in multiagent reinforcement learning
with Shapley values", IEEE CIM 2022) on scripted teams whose credit is known in advance:

- `particle/simple_spread-v0` (MPE cooperative navigation, 3 agents and 6 agents): agents that
  steer to "their" landmark (landmark `i` for agent `i`, a velocity-damped bang-bang controller)
  next to one idle agent (always no-op);
- `social/public_goods-v0` (linear public goods game, 10 rounds, endowment 10, multiplier 1.6;
  4 agents and 12 agents): full contributors, half contributors and free riders.

`v(S)` is the mean team return (summed over agents and steps) of `--episodes` episodes in which
the agents of `S` play their policy and the others play the *absent-agent baseline policy*:
`"noop"` (action 0: no-op in simple spread, contribute nothing in public goods) or `"random"`
(uniform over the legal actions), see `rollout_value_fn`. Every coalition is evaluated with the
same key (common random numbers). Small teams use `exact_shapley` (`2^A` coalitions), the larger
ones `monte_carlo_shapley` (antithetic permutation sampling), compared with the exact values where
`2^A` is small enough (6 particle agents), and with the analytic values (12 public goods agents).

Checks printed for every table: efficiency (`sum_i phi_i = v(all) - v(none)`), and the known
answers: with the no-op baseline the idle particle agent is a null player (`phi = 0` exactly); in
public goods the team return is `A e T + (r - 1) e sum_t sum_i c_i`, additive in the agents, so
`phi_i = (r - 1) e T (c_i - c_base)` with `c_base` the baseline's mean contributed fraction
(0 for no-op, 1/2 for random).

    python baselines/shapley_credit.py [--episodes 64] [--permutations 128] [--exact-batches 8]
        [--results baselines/results/shapley_credit.json]

`--results` writes every table's values (one row per team and absent-agent baseline: exact and
Monte Carlo values, their standard errors, the analytic values where known, `v(all)`, `v(none)`)
for the generated README row.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np

import marljax
from marljax.agents.base import Agent, AgentParams
from marljax.evaluation.shapley import exact_shapley, monte_carlo_shapley, rollout_value_fn
from marljax.shell.result_files import write_results

NOOP, LEFT, RIGHT, DOWN, UP = range(5)  # simple spread's discrete actions


def scripted_agent(policy) -> Agent:
    """A non-learning `Agent` whose `act` is `policy(agent_state [A], obs [E, A, ...])`.

    The policy is deterministic, so greedy acting is the same policy.
    """

    def act(agent_state, carry, observation, key, hparams, greedy=False):
        return policy(agent_state, observation.obs), carry, {}

    return Agent(
        init=lambda key, hparams: None,
        initial_carry=lambda num_envs: (),
        act=act,
        update=lambda state, traj, hparams, key: (state, {}),
        default_hparams=lambda: (),
        get_params=lambda state: AgentParams(policy=state),
    )


def spread_policy(active: jax.Array, obs: jax.Array) -> jax.Array:
    """Agent `i` (if `active[i]`) steers to landmark `i`; inactive agents play no-op.

    Target direction = landmark offset - 0.5 x velocity (damps the approach); the action moves
    along its larger axis, no-op when within 0.05.
    """
    A = obs.shape[-2]
    vel = obs[..., 0:2]  # [E, A, 2]
    rel = obs[..., 4 : 4 + 2 * A].reshape(*obs.shape[:-1], A, 2)  # [E, A, L=A, 2]
    own = jnp.take_along_axis(rel, jnp.arange(A)[None, :, None, None], axis=-2)[..., 0, :]
    d = own - 0.5 * vel
    horizontal = jnp.abs(d[..., 0]) > jnp.abs(d[..., 1])
    move = jnp.where(
        horizontal,
        jnp.where(d[..., 0] > 0, RIGHT, LEFT),
        jnp.where(d[..., 1] > 0, UP, DOWN),
    )
    move = jnp.where(jnp.max(jnp.abs(d), axis=-1) < 0.05, NOOP, move)
    return jnp.where(active[None, :], move, NOOP).astype(jnp.int32)


def constant_policy(levels: jax.Array, obs: jax.Array) -> jax.Array:
    """Agent `i` always plays action `levels[i]` (public goods: its contribution level)."""
    return jnp.broadcast_to(levels, obs.shape[:2]).astype(jnp.int32)


def fmt(x) -> str:
    """`[1.23, -4.56]`: an array with 2 decimals."""
    return "[" + ", ".join(f"{v:.2f}" for v in np.asarray(x, np.float64).ravel()) + "]"


def report(title, env, params, agent, state, baseline, args, exact=True, mc=False):
    """Print Shapley values (exact and/or Monte Carlo) with the efficiency check; return them.

    The exact values are those of one batch of `--episodes` episodes (one key for every
    coalition), so they satisfy efficiency against `v(all) - v(none)` of that batch exactly.
    The Monte Carlo estimate draws fresh episodes for every permutation, so it estimates the
    *expected* Shapley values; it is compared with the exact values averaged over
    `--exact-batches` independent batches (mean and standard error).
    """
    A = env.num_agents
    value = rollout_value_fn(
        env, params, agent, state, (), num_episodes=args.episodes, baseline=baseline
    )
    key = jax.random.PRNGKey(args.seed)
    v_all = float(value(jnp.ones((A,), bool), key))
    v_none = float(value(jnp.zeros((A,), bool), key))
    print(f"\n{title} | absent agents play {baseline!r}")
    print(f"  v(all) = {v_all:.2f}, v(none) = {v_none:.2f}, gain = {v_all - v_none:.2f}")
    out = {"v_all": v_all, "v_none": v_none}
    if exact:
        phi = np.asarray(exact_shapley(value, A, key))
        print(f"  exact ({2**A} coalitions x {args.episodes} episodes): {fmt(phi)}")
        print(
            f"    efficiency: sum = {phi.sum():.4f} vs gain {v_all - v_none:.4f} "
            f"(|diff| {abs(phi.sum() - (v_all - v_none)):.1e})"
        )
        out["exact"] = phi
    if mc:
        est = monte_carlo_shapley(value, A, key, num_permutations=args.permutations)
        phi_mc, se = np.asarray(est.values), np.asarray(est.stderr)
        print(
            f"  Monte Carlo ({args.permutations} permutations, antithetic, "
            f"{args.permutations * (A + 1)} coalition values): {fmt(phi_mc)}"
        )
        print(f"    stderr: {fmt(se)}; sum = {phi_mc.sum():.2f}")
        if exact:
            keys = jax.random.split(jax.random.PRNGKey(args.seed + 1), args.exact_batches)
            batches = np.stack([np.asarray(exact_shapley(value, A, k)) for k in keys])
            mean = batches.mean(axis=0)
            se_mean = batches.std(axis=0, ddof=1) / np.sqrt(len(batches))
            z = np.abs(phi_mc - mean) / np.maximum(np.sqrt(se**2 + se_mean**2), 1e-9)
            print(
                f"  exact, mean over {args.exact_batches} batches of {args.episodes} episodes: "
                f"{fmt(mean)} (stderr {fmt(se_mean)})"
            )
            print(f"    |MC - exact mean| / combined stderr: {fmt(z)}")
            out["exact_mean"], out["exact_mean_stderr"], out["mc_z"] = mean, se_mean, z
        out["mc"], out["mc_stderr"] = phi_mc, se
    return out


def row(setting: str, baseline: str, out: dict, analytic=None) -> dict:
    """One result row: a team's Shapley values under one absent-agent baseline (`seed`: one)."""
    per_seed = {k: [np.asarray(v, np.float64)] for k, v in out.items()}
    if analytic is not None:
        per_seed["analytic"] = [np.asarray(analytic, np.float64)]
    return {"setting": setting, "baseline": baseline, "per_seed": per_seed}


def particle(args, num_agents: int, mc: bool) -> list[dict]:
    env, params = marljax.make(
        "particle/simple_spread-v0", num_agents=num_agents, num_landmarks=num_agents
    )
    active = jnp.arange(num_agents) != num_agents - 1  # the last agent idles
    agent = scripted_agent(spread_policy)
    title = (
        f"particle/simple_spread-v0, {num_agents} agents, 25 steps: agents "
        f"0..{num_agents - 2} steer to their landmark, agent {num_agents - 1} idles"
    )
    rows = []
    for baseline in ("noop", "random"):
        out = report(title, env, params, agent, active, baseline, args, exact=True, mc=mc)
        if baseline == "noop":
            print(
                f"    null player (idle agent, no-op baseline): exact phi = {out['exact'][-1]:.2e}"
            )
        rows.append(row(f"simple_spread, {num_agents} agents", baseline, out))
    return rows


def public_goods(args, levels: list[int], exact: bool, mc: bool) -> list[dict]:
    env, params = marljax.make("social/public_goods-v0", num_agents=len(levels))
    frac = np.asarray(levels) / (env.num_levels - 1)
    gain = (float(params.multiplier) - 1.0) * float(params.endowment) * int(params.num_rounds)
    names = {1.0: "full", 0.5: "half", 0.0: "free rider"}
    title = (
        f"social/public_goods-v0, {len(levels)} agents (r = {float(params.multiplier)}, "
        f"e = {float(params.endowment)}, T = {int(params.num_rounds)}): "
        + ", ".join(names.get(f, str(f)) for f in frac)
    )
    agent = scripted_agent(constant_policy)
    rows = []
    for baseline, c_base in (("noop", 0.0), ("random", 0.5)):
        out = report(title, env, params, agent, jnp.asarray(levels), baseline, args, exact, mc)
        print(f"    analytic (r - 1) e T (c_i - {c_base}): {fmt(gain * (frac - c_base))}")
        setting = f"public_goods, {len(levels)} agents"
        rows.append(row(setting, baseline, out, analytic=gain * (frac - c_base)))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=64, help="episodes per coalition value")
    parser.add_argument("--permutations", type=int, default=128, help="Monte Carlo permutations")
    parser.add_argument(
        "--exact-batches", type=int, default=8, help="episode batches averaged for exact vs MC"
    )
    parser.add_argument("--seed", type=int, default=0, help="PRNG seed")
    parser.add_argument("--results", help="write every table's values (JSON)")
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error(f"--episodes must be >= 1, got {args.episodes}")
    if args.exact_batches < 2:
        parser.error(
            f"--exact-batches must be >= 2 (for a standard error), got {args.exact_batches}"
        )
    if args.permutations < 4 or args.permutations % 2:
        parser.error(f"--permutations must be even and >= 4, got {args.permutations}")
    rows = particle(args, 3, mc=False) + particle(args, 6, mc=True)
    rows += public_goods(args, [4, 4, 2, 0], exact=True, mc=False)
    rows += public_goods(args, [4, 4, 4, 4, 2, 2, 2, 2, 0, 0, 0, 0], exact=False, mc=True)
    if args.results:
        config = {"episodes": args.episodes, "permutations": args.permutations,
                  "exact_batches": args.exact_batches, "seed": args.seed,
                  "parameter_mode": "scripted policies"}  # fmt: skip
        write_results(args.results, "baselines/shapley_credit.py", config, rows)


if __name__ == "__main__":
    main()
