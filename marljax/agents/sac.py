"""HASAC and MASAC: off-policy maximum-entropy actor-critic for cooperative games, ONE learner.

- Centralised twin soft Q critic `Q_j(s, a_1..a_A)`, j in {1, 2}, on the global state and the
  joint action, with Polyak-averaged target networks and the clipped double-Q minimum
  (Fujimoto et al. 2018, TD3; Haarnoja et al. 2018, SAC).
- Decentralised actors `pi_i(a_i | o_i)`: parameter modes `independent` (default: one pytree with
  a leading agent axis `[A, ...]`), `shared` and `shared_id` (see `marljax.agents.common`).
- `sequential=True` (HASAC, Liu et al. 2024, "Maximum Entropy Heterogeneous-Agent Reinforcement
  Learning", ICLR; its template MEHAML): at every actor update a permutation of the agents is
  drawn (`fixed_order=True`: 0, 1, ..., A-1) and the agents are updated one after the other. Agent
  `i_m` maximises `E[min_j Q_j(s, a) - alpha_i log pi_i(a_i | o_i)]` where the joint action holds
  the actions of the already updated agents `i_1..i_{m-1}` re-sampled from their NEW policies;
  after its step, agent `i_m`'s new action overwrites its slot. This is a `lax.scan` over the
  permutation reading and writing slice `i` of the stacked actor parameters and optimiser
  states, so the compiled program does not grow with the number of agents.
- `sequential=False` (MASAC): every agent is updated simultaneously against joint actions
  sampled from the current (pre-update) policies, for ablations of the sequential scheme.
- Per-agent temperature `alpha_i`, fixed (`auto_alpha=False`, the HARL default) or tuned towards
  a target entropy (Haarnoja et al. 2018b, "Soft Actor-Critic Algorithms and Applications"):
  `-dim(A)` for continuous actions, `target_entropy_scale * log(num_actions)` for discrete ones.
  Issue 7 reports a shape bug in the HASAC reference code that makes the discrete target zero;
  it is deliberately not reproduced: the target here is positive and scales with `log(N)`.
- Discrete actions: masked categorical policies; the actor and temperature losses use the exact
  expectation over the agent's own actions (Christodoulou 2019, "Soft Actor-Critic for Discrete
  Action Settings"), the critic sees one-hot actions. Continuous actions: tanh-squashed Gaussian
  with the log-determinant correction (`marljax.distributions.TanhGaussian`), rescaled to the
  env's action box; the critic sees actions in `[-1, 1]`.
- Replay: every update adds the rollout to an on-device buffer (`marljax.replay`, one item per
  transition) as n-step transitions, then takes `round(utd_ratio * rollout_len)` gradient steps.
  The n-step window is cut at episode ends (truncation bootstraps from the final observation,
  termination does not) and at the end of the rollout (the last `n - 1` steps of a rollout use
  shorter windows), so use `rollout_len >= n_step` for full windows.

Defaults follow the HARL repository's published HASAC configuration
(`harl/configs/algos_cfgs/hasac.yaml`, Liu et al. 2024): MLP (256, 256) ReLU, Adam with actor and
critic lr 5e-4, fixed temperature 1e-3 (alpha lr 3e-4 when tuned), gamma 0.99, batch 1000,
Polyak 0.005, 20-step returns, Huber critic loss (delta 10), ValueNorm, 10k warm-up steps, one
gradient step per vectorised environment step, independent parameters, random order. Deviations:
the buffer holds 100k transitions (HARL: 1M; use the `harl` preset), and HARL's input LayerNorm
("feature normalisation") is not used. HARL's tuned config for continuous simple spread is the
`harl_mpe` preset (learned temperature from 1, MSE, no ValueNorm). Two differences from the HARL
code that are deliberate: HARL's squashed Gaussian outputs `high[0] * tanh(u)`, i.e. `[-1, 1]`
for MPE's `Box(0, 1)` actions (which the PettingZoo env does not clip), while here the unit box
is mapped affinely onto `[low, high]` (log-densities and the target entropy `-dim(A)` refer to
the unit box; the affine map only shifts them by a constant); and HARL's critic uses a separate
joint temperature (its own learned `log alpha`) in the soft target, while here the target
subtracts `sum_i alpha_i log pi_i` with the agents' temperatures.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from marljax import distributions, losses
from marljax.agents import common
from marljax.agents.base import Agent, Observation, Trajectory
from marljax.core import spaces
from marljax.core.types import Environment, EnvParams
from marljax.networks import MLP
from marljax.replay import ReplayState, make_replay

Array = jax.Array

#: log-std bounds of the Gaussian policy head (Haarnoja et al. 2018's reference implementation).
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0


@dataclasses.dataclass(frozen=True)
class SACConfig:
    """Static structure of the HASAC / MASAC learner (shapes, loop lengths, switches).

    Attributes:
      sequential: True: HASAC's sequential heterogeneous-agent update; False: MASAC.
      fixed_order: update agents in the order 0..A-1 instead of a fresh random permutation.
      parameter_mode: "independent" (stacked `[A, ...]`), "shared" or "shared_id".
      action_type: "auto" (from the env's action space), "discrete" or "continuous"; a value
        that contradicts the env raises a `ValueError` when the agent is built.
      hidden_sizes: widths of the actor and critic MLPs.
      activation: MLP activation.
      n_step: length of the n-step return window.
      critic_loss: "huber" (delta `hparams.huber_delta`) or "mse" (`0.5 * td^2`).
      value_norm: learn the critic in a running standardised scale of the targets (ValueNorm).
      auto_alpha: tune each agent's temperature towards the target entropy.
      target_entropy: override of the target entropy (None: `-dim(A)` continuous,
        `hparams.target_entropy_scale * log(N)` discrete). Must be negative for continuous
        actions and in `(0, log N]` for discrete ones.
      warmup_steps: environment steps with uniform random actions; learning starts after them.
      utd_ratio: gradient steps per vectorised environment step (HARL's `update_per_train`);
        an update of a rollout of `T` steps takes `max(1, round(utd_ratio * T))` steps.
      policy_delay: actor and temperature updated every `policy_delay` gradient steps (TD3).
      buffer_size: replay capacity in transitions.
      batch_size: transitions per gradient step (at most `buffer_size`).
    """

    sequential: bool = True
    fixed_order: bool = False
    parameter_mode: str = "independent"
    action_type: str = "auto"
    hidden_sizes: tuple[int, ...] = (256, 256)
    activation: str = "relu"
    n_step: int = 20
    critic_loss: str = "huber"
    value_norm: bool = True
    auto_alpha: bool = False
    target_entropy: float | None = None
    warmup_steps: int = 10_000
    utd_ratio: float = 1.0
    policy_delay: int = 1
    buffer_size: int = 100_000
    batch_size: int = 1000

    def __post_init__(self):
        if isinstance(self.target_entropy, str):  # from the CLI / YAML: "none", "null" or a number
            text = self.target_entropy.strip().lower()
            try:
                value = None if text in ("none", "null", "") else float(text)
            except ValueError:
                raise ValueError(
                    f"SACConfig.target_entropy must be a number or none, got {self.target_entropy!r}"
                ) from None
            object.__setattr__(self, "target_entropy", value)
        if self.target_entropy is not None:
            value = self.target_entropy
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
                raise ValueError(
                    f"SACConfig.target_entropy must be a number or none, got {value!r}"
                )
            if not math.isfinite(float(value)):
                raise ValueError(f"SACConfig.target_entropy must be finite, got {value!r}")
            object.__setattr__(self, "target_entropy", float(value))
        common.check_parameter_mode(self.parameter_mode)
        _choice("action_type", self.action_type, ("auto", "discrete", "continuous"))
        _choice("critic_loss", self.critic_loss, ("huber", "mse"))
        for name in ("n_step", "policy_delay", "buffer_size", "batch_size"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"SACConfig.{name} must be >= 1, got {getattr(self, name)}")
        if int(self.warmup_steps) < 0:
            raise ValueError(f"SACConfig.warmup_steps must be >= 0, got {self.warmup_steps}")
        if not 0 < float(self.utd_ratio) < math.inf:
            raise ValueError(f"SACConfig.utd_ratio must be finite and > 0, got {self.utd_ratio}")
        if not self.hidden_sizes or any(int(h) < 1 for h in self.hidden_sizes):
            raise ValueError(
                f"SACConfig.hidden_sizes must be positive widths, got {self.hidden_sizes}"
            )
        if self.batch_size > self.buffer_size:
            raise ValueError(
                f"SACConfig.batch_size = {self.batch_size} is larger than the replay buffer "
                f"(buffer_size = {self.buffer_size}): raise buffer_size or lower batch_size"
            )


@struct.dataclass
class SACHParams:
    """Traced hyperparameters of HASAC / MASAC (each may be swept with `vmap`).

    Attributes:
      actor_lr, critic_lr, alpha_lr: Adam learning rates.
      gamma: discount.
      tau: Polyak rate of the target critics (per gradient step).
      init_alpha: initial temperature (the fixed one when `auto_alpha=False`).
      target_entropy_scale: discrete target entropy as a fraction of `log(N)`.
      huber_delta: Huber threshold of the critic loss.
      max_grad_norm: global gradient-norm clip of actor and critic steps (per agent for actors).
      reward_scale: multiplies the team reward (the mean of the agents' rewards).
    """

    actor_lr: Any = 5e-4
    critic_lr: Any = 5e-4
    alpha_lr: Any = 3e-4
    gamma: Any = 0.99
    tau: Any = 0.005
    init_alpha: Any = 1e-3
    target_entropy_scale: Any = 0.98
    huber_delta: Any = 10.0
    max_grad_norm: Any = 10.0
    reward_scale: Any = 1.0


@struct.dataclass
class SACState:
    """Everything that changes while training (all leaves are arrays; checkpointable)."""

    actor_params: Any  # leading [A] axis in the independent mode
    critic_params: Any  # leading [2] axis: the twin critics
    target_critic_params: Any
    actor_opt_state: Any  # leading [A] axis in the independent mode
    critic_opt_state: Any
    log_alpha: Array  # [A]
    alpha_opt_state: Any
    value_norm: losses.RunningMeanStd  # [] statistics of the critic targets
    replay: ReplayState  # leaves [C, ...], one transition per item
    env_steps: Array  # [] int32
    grad_steps: Array  # [] int32
    num_updates: Array  # [] int32


#: named published configurations: (SACConfig overrides, SACHParams overrides, source).
PRESETS: dict[str, tuple[dict[str, Any], dict[str, Any], str]] = {
    "harl": (
        {"sequential": True, "buffer_size": 1_000_000},
        {},
        "HARL harl/configs/algos_cfgs/hasac.yaml (Liu et al. 2024): the marljax defaults with "
        "the published 1M-transition buffer.",
    ),
    "harl_masac": (
        {"sequential": False, "buffer_size": 1_000_000},
        {},
        "The same configuration with the simultaneous update (MASAC), the paper's ablation.",
    ),
    "harl_mpe": (
        {
            "sequential": True,
            "auto_alpha": True,
            "critic_loss": "mse",
            "value_norm": False,
            "buffer_size": 1_000_000,
        },
        dict(init_alpha=1.0, max_grad_norm=1e9),
        "HARL tuned_configs/pettingzoo_mpe/simple_spread_v2-continuous/hasac/config.json (Liu "
        "et al. 2024): hasac.yaml but with a learned temperature (HARL starts log alpha at 0, "
        "i.e. alpha = 1; its 'alpha: 0.2' is unused when auto_alpha is on), MSE critic loss, no "
        "ValueNorm; HARL clips no gradients. Its 20 envs x 1 gradient step per vector step is "
        "0.05 gradient steps per transition: with E envs use utd_ratio = E / 20 for that ratio.",
    ),
    "sac_v2": (
        {
            "n_step": 1,
            "critic_loss": "mse",
            "value_norm": False,
            "auto_alpha": True,
            "batch_size": 256,
            "buffer_size": 1_000_000,
        },
        dict(actor_lr=3e-4, critic_lr=3e-4, alpha_lr=3e-4, init_alpha=1.0, max_grad_norm=1e9),
        "Haarnoja et al. 2018b, 'Soft Actor-Critic Algorithms and Applications', table 1: Adam "
        "3e-4, batch 256, 1M buffer, tau 0.005, gamma 0.99, learned temperature, 1-step targets.",
    ),
}


def preset(name: str) -> tuple[dict[str, Any], SACHParams]:
    """A published configuration: `(SACConfig overrides, SACHParams)`; see `PRESETS`."""
    config, values = common.lookup_preset(PRESETS, name)
    return config, SACHParams(**values)


def _choice(name: str, value: Any, choices: tuple) -> None:
    common.check_choice(f"SACConfig.{name}", value, choices)


# ----------------------------------------------------------------------------- pure pieces


def agent_order(key: Array, num_agents: int, fixed_order: bool) -> Array:
    """The order of HASAC's sequential update: `[A]` int32, a random permutation or `0..A-1`."""
    if fixed_order:
        return jnp.arange(num_agents, dtype=jnp.int32)
    return jax.random.permutation(key, num_agents).astype(jnp.int32)


def n_step_transitions(
    r_t: Array, terminated_t: Array, done_t: Array, gamma: Array, n: int
) -> tuple[Array, Array, Array]:
    """n-step return sums and bootstrap indices inside one rollout.

    For each step `t` the window covers steps `t .. t + k - 1` with `k <= n`, cut after the first
    episode end and at the end of the rollout:

        R_t = sum_{m < k} gamma^m r_{t+m},   discount_t = gamma^k (1 - terminated_{t+k-1}),

    and the target is `R_t + discount_t * V(next observation of step t + k - 1)`.

    Args:
      r_t: `[T, E]` rewards.
      terminated_t: `[T, E]` bool, the step ended its episode in a terminal state.
      done_t: `[T, E]` bool, the step ended its episode (terminated or truncated).
      gamma: `[]` discount.
      n: the window length (static, >= 1).

    Returns:
      `(R [T, E], discount [T, E], bootstrap step index [T, E] int32)`.
    """
    chex_shape = r_t.shape
    if terminated_t.shape != chex_shape or done_t.shape != chex_shape or r_t.ndim != 2:
        raise ValueError(
            f"n_step_transitions needs [T, E] arrays of one shape, got {r_t.shape}, "
            f"{terminated_t.shape}, {done_t.shape}"
        )
    T, E = r_t.shape
    t = jnp.arange(T)[:, None]
    e = jnp.arange(E)[None, :]
    ret = jnp.zeros_like(r_t)
    count = jnp.zeros((T, E), jnp.float32)
    boot = jnp.broadcast_to(t, (T, E)).astype(jnp.int32)
    alive = jnp.ones((T, E), bool)
    for k in range(n):
        j = t + k
        valid = alive & (j < T)
        jc = jnp.minimum(j, T - 1)
        ret = ret + jnp.where(valid, gamma**k * r_t[jc, e], 0.0)
        boot = jnp.where(valid, jc, boot).astype(jnp.int32)
        count = count + valid
        alive = valid & ~done_t[jc, e]
    discount = gamma**count * (1.0 - terminated_t[boot, e].astype(jnp.float32))
    return ret, discount, boot


def target_entropy(
    config: SACConfig, discrete: bool, act_dim: int, scale: Array | float = 0.98
) -> Array | float:
    """Target entropy per agent: the override, `-dim(A)` (continuous) or `scale * log(N)`."""
    if config.target_entropy is not None:
        return float(config.target_entropy)
    if discrete:
        return scale * math.log(act_dim)
    return -float(act_dim)


def _check_target_entropy(config: SACConfig, discrete: bool, act_dim: int) -> None:
    value = config.target_entropy
    if value is None:
        return
    if discrete and not 0.0 < value <= math.log(act_dim) + 1e-9:
        raise ValueError(
            f"SACConfig.target_entropy = {value} is invalid for discrete actions: an entropy over "
            f"{act_dim} actions lies in (0, log {act_dim} = {math.log(act_dim):.3f}]; a negative "
            "target (the continuous convention -dim(A)) never binds and drives the temperature "
            "to zero. Leave it None to use target_entropy_scale * log(N)."
        )
    if not discrete and value >= 0.0:
        raise ValueError(
            f"SACConfig.target_entropy = {value} has the wrong sign for continuous actions: the "
            f"convention is negative, -dim(A) = {-act_dim} (Haarnoja et al. 2018b); leave it "
            "None for that default."
        )


# ----------------------------------------------------------------------------- the agent


@dataclasses.dataclass(frozen=True)
class SACNetworks:
    """The flax modules of a SAC learner (for tests and analysis code that re-apply them).

    Attributes:
      actor: `actor.apply(params_i, x [..., D_in]) -> [..., N]` logits (discrete) or
        `[..., 2 * D]` mean and log-std (continuous).
      critic: `critic.apply(params_j, z [..., S + A * F]) -> [..., 1]` on the flattened global
        state and the joint action features (one-hot, `F = N`, or in `[-1, 1]`, `F = D`).
      discrete: the action type.
      act_dim: `N` (discrete) or `D` (continuous).
      actor_in_dim: `D_in`.
    """

    actor: MLP
    critic: MLP
    discrete: bool
    act_dim: int
    actor_in_dim: int


def make_sac_networks(
    config: SACConfig, env: Environment, env_params: EnvParams | None = None
) -> SACNetworks:
    """The actor and critic modules `make_sac` builds for `env` (see `SACNetworks`)."""
    env_params = env.default_params() if env_params is None else env_params
    act_space = env.action_space(env_params)
    discrete = isinstance(act_space, spaces.Discrete)
    if not discrete and not isinstance(act_space, spaces.Box):
        raise ValueError(f"SAC supports Discrete and Box action spaces; {env.name} has {act_space}")
    if config.action_type == "discrete" and not discrete:
        raise ValueError(
            f"SACConfig.action_type='discrete' but {env.name} has continuous actions "
            f"({act_space}); use action_type='auto' or 'continuous'"
        )
    if config.action_type == "continuous" and discrete:
        raise ValueError(
            f"SACConfig.action_type='continuous' but {env.name} has discrete actions "
            f"({act_space}); use action_type='auto' or 'discrete'"
        )
    if not discrete and len(act_space.shape) != 1:
        raise ValueError(f"SAC needs 1-D continuous actions, got shape {act_space.shape}")
    act_dim = act_space.n if discrete else act_space.shape[0]
    obs_dim = env.observation_space(env_params).flat_dim
    in_dim = obs_dim + (env.num_agents if config.parameter_mode == "shared_id" else 0)
    out_dim = act_dim if discrete else 2 * act_dim
    actor = MLP(tuple(config.hidden_sizes), config.activation, out_dim, 0.01)
    critic = MLP(tuple(config.hidden_sizes), config.activation, 1, 1.0)
    return SACNetworks(actor, critic, discrete, act_dim, in_dim)


def make_sac(config: SACConfig, env: Environment, env_params: EnvParams | None = None) -> Agent:
    """Build a HASAC (`config.sequential`) or MASAC agent for `env`.

    Args:
      config: static structure.
      env: the environment (its spaces and number of agents are read).
      env_params: params used to read the spaces (default: `env.default_params()`).

    Returns:
      An `Agent`. `act` samples from the policies (uniformly at random during warm-up); its
      `policy_info` is `{"mode": [E, A, ...]}`, the policies' most likely actions in env units.
      `update` metrics include `actor_order` `[A]`, the agent order of the last actor update.

    Raises:
      ValueError: an action space the learner cannot handle, an `action_type` that contradicts
        the env, a target entropy of the wrong sign for the action type.
    """
    env_params = env.default_params() if env_params is None else env_params
    nets = make_sac_networks(config, env, env_params)
    discrete, F = nets.discrete, nets.act_dim
    _check_target_entropy(config, discrete, F)
    A = env.num_agents
    act_space = env.action_space(env_params)
    obs_space = env.observation_space(env_params)
    state_space = env.global_state_space(env_params)
    obs_rank, state_rank = len(obs_space.shape), len(state_space.shape)
    independent = config.parameter_mode == "independent"
    add_id = config.parameter_mode == "shared_id"
    replay = make_replay(config.buffer_size, config.batch_size)
    if not discrete:
        low = jnp.broadcast_to(jnp.asarray(act_space.low, jnp.float32), act_space.shape)
        high = jnp.broadcast_to(jnp.asarray(act_space.high, jnp.float32), act_space.shape)
    N = F if discrete else 0

    # ---------------------------------------------------------------- helpers
    def inputs(obs: Array) -> Array:
        return common.agent_inputs(obs, obs_rank, A, add_id)  # [..., A, D_in]

    def state_inputs(gs: Array) -> Array:
        return gs.reshape(*gs.shape[: gs.ndim - state_rank], -1).astype(jnp.float32)

    def actor_all(params: Any, x: Array) -> Array:
        """`x [B, A, D_in]` -> `[B, A, O]`."""
        if independent:
            return jax.vmap(nets.actor.apply, in_axes=(0, 1), out_axes=1)(params, x)
        return nets.actor.apply(params, x)

    def slice_agent(tree: Any, i: Array) -> Any:
        return jax.tree.map(lambda x: x[i], tree) if independent else tree

    def write_agent(tree: Any, i: Array, new: Any) -> Any:
        if independent:
            return jax.tree.map(lambda x, y: x.at[i].set(y), tree, new)
        return new

    def policy(out: Array, mask: Array | None):
        if discrete:
            return distributions.masked_categorical(out, mask)
        mean, log_std = jnp.split(out, 2, axis=-1)
        return distributions.TanhGaussian(mean, jnp.clip(log_std, LOG_STD_MIN, LOG_STD_MAX))

    def features(a: Array) -> Array:
        """Actions `[..., A]` int or `[..., A, D]` in [-1, 1] -> `[..., A, F]` critic features."""
        return jax.nn.one_hot(a, F) if discrete else a

    def critic_apply(params: Any, gs: Array, feats: Array) -> Array:
        """Twin values `[2, ...]` of `gs [..., S]` and joint features `[..., A, F]`."""
        z = jnp.concatenate([gs, feats.reshape(*feats.shape[:-2], A * F)], axis=-1)
        return jax.vmap(nets.critic.apply, in_axes=(0, None))(params, z)[..., 0]

    def to_unit(a: Array) -> Array:
        return 2.0 * (a - low) / (high - low) - 1.0

    def to_env(a: Array) -> Array:
        return low + (a + 1.0) * 0.5 * (high - low)

    def sample_all(params: Any, x: Array, mask: Array, key: Array) -> tuple[Array, Array]:
        """Actions `[B, A(, D)]` (unit scale) and their log-probabilities `[B, A]`."""
        out = actor_all(params, x)
        if discrete:  # the masked categorical, written out (cheaper to compile than distrax's)
            logp_all = jax.nn.log_softmax(jnp.where(mask, out, distributions.MASKED_LOGIT))
            a = jax.random.categorical(key, logp_all)
            return a, jnp.take_along_axis(logp_all, a[..., None], axis=-1)[..., 0]
        return policy(out, None).sample_and_log_prob(seed=key)

    def make_tx(lr: Array, max_grad_norm: Array) -> optax.GradientTransformation:
        return optax.chain(
            optax.clip_by_global_norm(max_grad_norm),
            optax.scale_by_adam(),
            optax.scale_by_learning_rate(lr),
        )

    def alpha_of(state: SACState, hp: SACHParams) -> Array:
        if config.auto_alpha:
            return jnp.exp(state.log_alpha)
        return jnp.broadcast_to(jnp.asarray(hp.init_alpha, jnp.float32), (A,))

    def example_item() -> dict[str, Any]:
        z = jnp.zeros
        act = z((A,), jnp.int32) if discrete else z((A, F))
        return {
            "obs": z((A, *obs_space.shape), obs_space.dtype),
            "mask": z((A, N), bool),
            "state": z(state_space.shape),
            "actions": act,
            "reward": z(()),
            "discount": z(()),
            "next_obs": z((A, *obs_space.shape), obs_space.dtype),
            "next_state": z(state_space.shape),
            "next_mask": z((A, N), bool),
        }

    # ---------------------------------------------------------------- init / act
    def init(key: Array, hparams: SACHParams) -> SACState:
        key_actor, key_critic = jax.random.split(key)
        init_actor = lambda k: nets.actor.init(k, jnp.zeros((1, nets.actor_in_dim)))  # noqa: E731
        actor_params = common.init_per_agent(init_actor, key_actor, A, independent)
        z_dim = state_space.flat_dim + A * F
        critic_params = jax.vmap(lambda k: nets.critic.init(k, jnp.zeros((1, z_dim))))(
            jax.random.split(key_critic, 2)
        )
        actor_tx = make_tx(hparams.actor_lr, hparams.max_grad_norm)
        actor_opt = (
            jax.vmap(actor_tx.init)(actor_params) if independent else actor_tx.init(actor_params)
        )
        log_alpha = jnp.full((A,), jnp.log(jnp.asarray(hparams.init_alpha, jnp.float32)))
        return SACState(
            actor_params=actor_params,
            critic_params=critic_params,
            target_critic_params=critic_params,
            actor_opt_state=actor_opt,
            critic_opt_state=make_tx(hparams.critic_lr, hparams.max_grad_norm).init(critic_params),
            log_alpha=log_alpha,
            alpha_opt_state=optax.adam(hparams.alpha_lr).init(log_alpha),
            value_norm=losses.running_mean_std_init(),
            replay=replay.init(example_item()),
            env_steps=jnp.int32(0),
            grad_steps=jnp.int32(0),
            num_updates=jnp.int32(0),
        )

    def initial_carry(num_envs: int) -> tuple:
        del num_envs
        return ()

    def act(state: SACState, carry: Any, observation: Observation, key: Array, hparams):
        del hparams
        key_policy, key_random = jax.random.split(key)
        out = actor_all(state.actor_params, inputs(observation.obs))  # [E, A, O]
        mask = observation.action_mask
        dist = policy(out, mask if discrete else None)
        a = dist.sample(seed=key_policy)
        warm = state.env_steps < config.warmup_steps
        if discrete:
            rand = jax.random.categorical(key_random, jnp.where(mask, 0.0, -jnp.inf))
            actions = jnp.where(warm, rand, a).astype(jnp.int32)
            mode = jnp.argmax(jnp.where(mask, out, -jnp.inf), axis=-1).astype(jnp.int32)
        else:
            rand = jax.random.uniform(key_random, a.shape, minval=-1.0, maxval=1.0)
            actions = to_env(jnp.where(warm, rand, a))
            mode = to_env(dist.mode())
        return actions, carry, {"mode": mode}

    # ---------------------------------------------------------------- learning
    def to_items(traj: Trajectory, hp: SACHParams) -> dict[str, Any]:
        T, E = traj.reward.shape[:2]
        done = jnp.logical_or(traj.terminated, traj.truncated)
        r = traj.reward.mean(-1) * hp.reward_scale
        ret, disc, boot = n_step_transitions(r, traj.terminated, done, hp.gamma, config.n_step)
        e = jnp.arange(E)[None, :]
        o = traj.observation
        actions = traj.actions if discrete else to_unit(traj.actions)
        mask = o.action_mask if discrete else jnp.zeros((T, E, A, 0), bool)
        next_mask = traj.next_action_mask[boot, e] if discrete else mask
        steps = {
            "obs": o.obs,
            "mask": mask,
            "state": o.global_state,
            "actions": actions,
            "reward": ret,
            "discount": disc,
            "next_obs": traj.next_obs[boot, e],
            "next_state": traj.next_global_state[boot, e],
            "next_mask": next_mask,
        }
        return jax.tree.map(lambda x: x.reshape(T * E, *x.shape[2:]), steps)

    def critic_step(state: SACState, batch, hp: SACHParams, key: Array):
        alpha = alpha_of(state, hp)
        x_next = inputs(batch["next_obs"])
        a_next, logp_next = sample_all(state.actor_params, x_next, batch["next_mask"], key)
        gs, gs_next = state_inputs(batch["state"]), state_inputs(batch["next_state"])
        q_next = critic_apply(state.target_critic_params, gs_next, features(a_next)).min(0)
        if config.value_norm:
            q_next = losses.unstandardize(state.value_norm, q_next)
        v_next = q_next - jnp.sum(alpha * logp_next, axis=-1)
        target = jax.lax.stop_gradient(batch["reward"] + batch["discount"] * v_next)
        vn = state.value_norm
        if config.value_norm:
            vn = losses.running_mean_std_update(vn, target)
            target_n = losses.standardize(vn, target)
        else:
            target_n = target
        feats = features(batch["actions"])

        def loss_fn(params):
            q = critic_apply(params, gs, feats)  # [2, B]
            td = q - target_n[None]
            if config.critic_loss == "huber":
                per = optax.huber_loss(td, delta=hp.huber_delta)
            else:
                per = 0.5 * td**2
            return per.mean(-1).sum(), q

        (loss, q), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.critic_params)
        tx = make_tx(hp.critic_lr, hp.max_grad_norm)
        updates, opt_state = tx.update(grads, state.critic_opt_state, state.critic_params)
        params = optax.apply_updates(state.critic_params, updates)
        q_true = losses.unstandardize(vn, q) if config.value_norm else q
        metrics = {
            "critic_loss": loss,
            "q_mean": q_true.mean(),
            "target_mean": target.mean(),
            "critic_grad_norm": optax.global_norm(grads),
        }
        return state.replace(critic_params=params, critic_opt_state=opt_state, value_norm=vn), (
            metrics
        )

    def agent_loss(p_i, i, x_i, mask_i, joint, alpha_i, critic_params, gs, vn, key):
        """Agent `i`'s soft policy loss against the critic at `joint` with its slot replaced.

        Returns `(loss, (mean log-prob, new action features [B, F]))`.
        """
        out = nets.actor.apply(p_i, x_i)
        if discrete:
            logits = jnp.where(mask_i, out, distributions.MASKED_LOGIT)
            logp = jax.nn.log_softmax(logits)  # [B, N]
            pi = jnp.exp(logp)
            eye = jnp.eye(F)[:, None, :]  # every own action, for the exact expectation
            cand = jnp.broadcast_to(joint, (F, *joint.shape))
            cand = cand.at[:, :, i].set(jnp.broadcast_to(eye, (F, joint.shape[0], F)))
            q = critic_apply(critic_params, jnp.broadcast_to(gs, (F, *gs.shape)), cand).min(0)
            if config.value_norm:
                q = losses.unstandardize(vn, q)  # [N, B]
            plogp = jnp.where(mask_i, pi * logp, 0.0)
            loss = jnp.mean(jnp.sum(alpha_i * plogp - pi * q.T, axis=-1))
            mean_logp = jnp.mean(jnp.sum(plogp, axis=-1))
            new_a = jax.random.categorical(key, jax.lax.stop_gradient(logits))
            return loss, (mean_logp, jax.nn.one_hot(new_a, F))
        dist = policy(out, None)
        a, logp = dist.sample_and_log_prob(seed=key)
        q = critic_apply(critic_params, gs, joint.at[:, i].set(a)).min(0)
        if config.value_norm:
            q = losses.unstandardize(vn, q)
        loss = jnp.mean(alpha_i * logp - q)
        return loss, (jnp.mean(logp), jax.lax.stop_gradient(a))

    def actor_step(state: SACState, batch, hp: SACHParams, key: Array):
        alpha = alpha_of(state, hp)
        key_order, key_joint, key_scan = jax.random.split(key, 3)
        x = inputs(batch["obs"])  # [B, A, D_in]
        mask = batch["mask"]
        gs = state_inputs(batch["state"])
        a0, _ = sample_all(state.actor_params, x, mask, key_joint)
        joint = jax.lax.stop_gradient(features(a0))  # [B, A, F]
        tx = make_tx(hp.actor_lr, hp.max_grad_norm)
        grad_fn = jax.value_and_grad(agent_loss, has_aux=True)
        vn = state.value_norm

        def loss_and_grad(params, i, joint, k):
            p_i = slice_agent(params, i)
            mask_i = mask[:, i] if discrete else None
            (loss, (mean_logp, new_feat)), g = grad_fn(
                p_i, i, x[:, i], mask_i, joint, alpha[i], state.critic_params, gs, vn, k
            )
            return g, loss, mean_logp, new_feat

        if config.sequential:
            order = agent_order(key_order, A, config.fixed_order)

            def body(carry, inp):
                params, opt_state, joint = carry
                i, k = inp
                k_loss, k_new = jax.random.split(k)
                g, loss, mean_logp, _ = loss_and_grad(params, i, joint, k_loss)
                p_i, o_i = slice_agent(params, i), slice_agent(opt_state, i)
                updates, o_i = tx.update(g, o_i, p_i)
                p_i = optax.apply_updates(p_i, updates)
                params = write_agent(params, i, p_i)
                opt_state = write_agent(opt_state, i, o_i)
                # re-sample agent i's action from its NEW policy for the agents after it
                out = nets.actor.apply(p_i, x[:, i])
                if discrete:
                    new_a = policy(out, mask[:, i]).sample(seed=k_new)
                else:
                    new_a = policy(out, None).sample(seed=k_new)
                joint = joint.at[:, i].set(jax.lax.stop_gradient(features(new_a[:, None])[:, 0]))
                return (params, opt_state, joint), (loss, mean_logp, i)

            keys = jax.random.split(key_scan, A)
            (params, opt_state, _), (loss, mean_logp, visited) = jax.lax.scan(
                body, (state.actor_params, state.actor_opt_state, joint), (order, keys)
            )
            loss_a = jnp.zeros((A,)).at[visited].set(loss)
            logp_a = jnp.zeros((A,)).at[visited].set(mean_logp)
        else:
            idx = jnp.arange(A)
            g, loss_a, logp_a, _ = jax.vmap(loss_and_grad, in_axes=(None, 0, None, 0))(
                state.actor_params, idx, joint, jax.random.split(key_scan, A)
            )
            if independent:
                updates, opt_state = jax.vmap(tx.update)(
                    g, state.actor_opt_state, state.actor_params
                )
            else:
                g = jax.tree.map(lambda x: x.mean(0), g)
                updates, opt_state = tx.update(g, state.actor_opt_state, state.actor_params)
            params = optax.apply_updates(state.actor_params, updates)
            visited = idx
        metrics = {
            "actor_loss": loss_a.mean(),
            "entropy": -logp_a.mean(),
            "actor_order": visited.astype(jnp.float32),
        }
        state = state.replace(actor_params=params, actor_opt_state=opt_state)
        if config.auto_alpha:
            tgt = target_entropy(config, discrete, F, hp.target_entropy_scale)
            err = jax.lax.stop_gradient(logp_a + tgt)  # [A]
            alpha_grad = -err  # d/d log_alpha of -log_alpha * (log pi + target)
            atx = optax.adam(hp.alpha_lr)
            upd, aopt = atx.update(alpha_grad, state.alpha_opt_state, state.log_alpha)
            state = state.replace(
                log_alpha=optax.apply_updates(state.log_alpha, upd), alpha_opt_state=aopt
            )
        return state, metrics

    def zero_actor_metrics() -> dict[str, Array]:
        z = jnp.float32(0.0)
        return {"actor_loss": z, "entropy": z, "actor_order": jnp.zeros((A,), jnp.float32)}

    def gradient_step(state: SACState, key: Array, hp: SACHParams):
        key_sample, key_critic, key_actor = jax.random.split(key, 3)
        batch = replay.sample(state.replay, key_sample)
        state, metrics = critic_step(state, batch, hp, key_critic)
        if config.policy_delay == 1:
            state, actor_metrics = actor_step(state, batch, hp, key_actor)
        else:
            state, actor_metrics = jax.lax.cond(
                state.grad_steps % config.policy_delay == 0,
                lambda s: actor_step(s, batch, hp, key_actor),
                lambda s: (s, zero_actor_metrics()),
                state,
            )
        metrics.update(actor_metrics)
        target = optax.incremental_update(state.critic_params, state.target_critic_params, hp.tau)
        state = state.replace(target_critic_params=target, grad_steps=state.grad_steps + 1)
        return state, metrics

    def update(state: SACState, traj: Trajectory, hparams: SACHParams, key: Array):
        T, E = traj.reward.shape[:2]
        state = state.replace(
            replay=replay.add(state.replay, to_items(traj, hparams)),
            env_steps=state.env_steps + T * E,
        )
        num_steps = max(1, int(round(config.utd_ratio * T)))

        def learn(s):
            s, metrics = jax.lax.scan(
                lambda c, k: gradient_step(c, k, hparams), s, jax.random.split(key, num_steps)
            )
            order = metrics.pop("actor_order")[-1]
            metrics = jax.tree.map(jnp.mean, metrics)
            metrics["actor_order"] = order
            return s, metrics

        def skip(s):
            z = jnp.float32(0.0)
            m = {"critic_loss": z, "q_mean": z, "target_mean": z, "critic_grad_norm": z}
            m.update(zero_actor_metrics())
            return s, m

        ready = jnp.logical_and(
            replay.can_sample(state.replay), state.env_steps >= config.warmup_steps
        )
        state, metrics = jax.lax.cond(ready, learn, skip, state)
        metrics["learning"] = ready.astype(jnp.float32)
        metrics["alpha"] = alpha_of(state, hparams).mean()
        metrics["buffer_size"] = state.replay.size
        return state.replace(num_updates=state.num_updates + 1), metrics

    return Agent(
        init=init,
        initial_carry=initial_carry,
        act=act,
        update=update,
        default_hparams=SACHParams,
        get_params=lambda s: {"actor": s.actor_params, "critic": s.critic_params},
    )


def hasac(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """HASAC: the sequential heterogeneous-agent update."""
    return make_sac(SACConfig(sequential=True, **config), env, env_params)


def masac(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """MASAC: every agent updated simultaneously."""
    return make_sac(SACConfig(sequential=False, **config), env, env_params)


def greedy_actions(
    config: SACConfig,
    env: Environment,
    state: SACState,
    observation: Observation,
    env_params: EnvParams | None = None,
) -> np.ndarray:
    """The policies' most likely actions `[A, ...]` at ONE observation (no env axis), in env units.

    For reading off what a run learned (e.g. the joint action of a one-shot matrix game).
    """
    env_params = env.default_params() if env_params is None else env_params
    agent = make_sac(config, env, env_params)
    obs = jax.tree.map(lambda x: x[None], observation)
    _, _, info = agent.act(state, (), obs, jax.random.PRNGKey(0), SACHParams())
    return np.asarray(info["mode"][0])


__all__ = [
    "LOG_STD_MIN",
    "LOG_STD_MAX",
    "PRESETS",
    "SACConfig",
    "SACHParams",
    "SACNetworks",
    "SACState",
    "agent_order",
    "greedy_actions",
    "hasac",
    "make_sac",
    "make_sac_networks",
    "masac",
    "n_step_transitions",
    "preset",
    "target_entropy",
]
