"""Value-based MARL: IQL, VDN and QMIX as ONE learner with a mixer switch.

- `mixer="none"`: independent Q-learning (IQL, Tan 1993): each agent's TD target uses its own
  reward and its own next-state value.
- `mixer="vdn"`: Q_tot = sum of the agents' chosen-action values (Sunehag et al. 2018).
- `mixer="qmix"`: Q_tot from a monotonic hypernetwork mixer on the global state (Rashid et al.
  2018), see `marljax.mixers.QMixer`.

The agent network is an MLP torso, an optional GRU (`marljax.networks.RecurrentCore`, carry reset
at episode starts) and a linear head giving one value per action; parameter modes `shared`,
`shared_id` and `independent` (see `marljax.agents.common`). Acting is epsilon-greedy over legal
actions, epsilon annealed linearly in environment steps between two traced hyperparameters.

Learning: every update adds the rollout to an on-device replay buffer (`marljax.replay`) as
fixed-length sequences of `sequence_len` steps, together with the recurrent carry at each
sequence start ("stored state", Kapturowski et al. 2019, R2D2), then takes `gradient_steps`
gradient steps on uniformly sampled batches of sequences. Targets:

- double-Q (van Hasselt et al. 2016): the online network picks the next action, the target
  network values it; next-action choices respect the next state's action mask;
- 1-step, n-step or TD(lambda) returns (`marljax.losses`), bootstrapping through truncation (on
  the value of the episode's final observation) but not termination, and cut at every episode
  boundary inside a sequence;
- target network: hard copy every `target_update_interval` gradient steps, or Polyak averaging
  with a traced `tau` every gradient step.

Published configurations differ (see `PRESETS`); the defaults follow PyMARL2 (Hu et al. 2021,
"Rethinking the Implementation Tricks and Monotonicity Constraint in Cooperative Multi-Agent
Reinforcement Learning"): Adam, lr 1e-3, TD(lambda = 0.6), epsilon 1 -> 0.05 over 100k steps,
hard target updates every 200 gradient steps, GRU agents.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Literal

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from marljax import losses
from marljax.agents import common
from marljax.agents.base import Agent, Observation, Trajectory
from marljax.core import spaces
from marljax.core.types import Environment, EnvParams
from marljax.core.wrappers import any_across_vmap
from marljax.mixers import POSITIVE_MAPS, QMixer, vdn_mix
from marljax.networks import MLP, RecurrentCore, orthogonal
from marljax.replay import ReplayState, make_replay

Array = jax.Array

Mixer = Literal["none", "vdn", "qmix"]


@dataclasses.dataclass(frozen=True)
class QConfig:
    """Static structure of the value-based learner (shapes, loop lengths, switches).

    Attributes:
      mixer: "none" (IQL), "vdn" or "qmix".
      parameter_mode: "shared", "shared_id" (shared + one-hot agent id) or "independent".
      hidden_sizes: widths of the agent MLP torso (before the GRU).
      activation: torso activation.
      recurrent: put a GRU between the torso and the Q head.
      gru_size: width of the GRU.
      mixer_embed_dim: QMIX mixing width.
      hypernet_hidden: QMIX hypernetwork hidden width.
      hypernet_layers: 1 (linear) or 2 (one hidden layer) QMIX hypernetworks.
      positive_map: non-negative map of the QMIX weights (abs, relu, softplus, exp).
      mixer_init_scale: orthogonal scale of the mixer's layers. Small by default: the mixing
        weights are products of hypernetwork layers applied to the raw global state, so with a
        scale of 1 and states of magnitude ~5 (e.g. LBF coordinates) Q_tot starts ~50x the
        agents' values and the TD targets run away (measured on LBF: target mean ~26 for
        returns <= 1, no learning in 400k steps; in 200k steps the team return reached 0.55
        with 0.01 and 0.46 with 0.1, one seed each). Much smaller scales slow the two-step game down (0.01: 4 of 8 seeds found
        the optimum in 600 updates, 0.1 and 1.0: 8 of 8).
      buffer_size: replay capacity in sequences.
      batch_size: sequences per gradient step.
      sequence_len: steps per stored sequence; must divide the runner's `rollout_len` and be at
        most the env's `max_steps`. Set it to the episode length (with `rollout_len` a multiple
        of it) to store whole episodes, as PyMARL and JaxMARL do.
      gradient_steps: gradient steps per update (per rollout).
      learning_starts: environment steps collected before the first gradient step (learning
        also waits until the buffer holds one batch).
      target: "one_step", "n_step" or "lambda" (TD(lambda)).
      n_steps: n of the n-step target.
      double_q: double-Q targets.
      target_update: "hard" (copy every `target_update_interval` gradient steps) or "polyak"
        (every gradient step, rate `hparams.tau`).
      target_update_interval: gradient steps between hard target updates.
      optimizer: "adam", "rmsprop" or "radam".
      lr_decay_steps: linear learning-rate decay to 0 over this many gradient steps (0: constant).
      team_reward: how VDN/QMIX turn per-agent rewards `[A]` into the team reward: "mean" or
        "sum" (for common-payoff games both give the common reward with "mean").
    """

    mixer: Mixer = "qmix"
    parameter_mode: str = "shared_id"
    hidden_sizes: tuple[int, ...] = (64,)
    activation: str = "relu"
    recurrent: bool = True
    gru_size: int = 64
    mixer_embed_dim: int = 32
    hypernet_hidden: int = 64
    hypernet_layers: int = 2
    positive_map: str = "abs"
    mixer_init_scale: float = 0.1
    buffer_size: int = 5000
    batch_size: int = 128
    sequence_len: int = 8
    gradient_steps: int = 1
    learning_starts: int = 0
    target: str = "lambda"
    n_steps: int = 3
    double_q: bool = True
    target_update: str = "hard"
    target_update_interval: int = 200
    optimizer: str = "adam"
    lr_decay_steps: int = 0
    team_reward: str = "mean"

    def __post_init__(self):
        _choice("mixer", self.mixer, ("none", "vdn", "qmix"))
        common.check_parameter_mode(self.parameter_mode)
        _choice("target", self.target, ("one_step", "n_step", "lambda"))
        _choice("target_update", self.target_update, ("hard", "polyak"))
        _choice("optimizer", self.optimizer, ("adam", "rmsprop", "radam"))
        _choice("team_reward", self.team_reward, ("mean", "sum"))
        _choice("positive_map", self.positive_map, tuple(POSITIVE_MAPS))
        _choice("hypernet_layers", self.hypernet_layers, (1, 2))
        for name in (
            "gru_size",
            "mixer_embed_dim",
            "hypernet_hidden",
            "buffer_size",
            "batch_size",
            "gradient_steps",
            "n_steps",
            "target_update_interval",
            "sequence_len",
        ):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"QConfig.{name} must be >= 1, got {getattr(self, name)}")
        for name in ("learning_starts", "lr_decay_steps"):
            if int(getattr(self, name)) < 0:
                raise ValueError(f"QConfig.{name} must be >= 0, got {getattr(self, name)}")
        if not self.hidden_sizes or any(int(h) < 1 for h in self.hidden_sizes):
            raise ValueError(
                f"QConfig.hidden_sizes must be positive widths, got {self.hidden_sizes}"
            )
        if self.buffer_size < self.batch_size:
            raise ValueError(
                f"QConfig.buffer_size = {self.buffer_size} sequences is smaller than one batch "
                f"(batch_size = {self.batch_size})"
            )


@struct.dataclass
class QHParams:
    """Traced hyperparameters of the value-based learner (each may be swept with `vmap`).

    Attributes:
      lr: learning rate.
      gamma: discount.
      td_lambda: lambda of the TD(lambda) target.
      eps_start, eps_finish: epsilon-greedy endpoints.
      eps_anneal_steps: environment steps over which epsilon goes linearly from start to finish.
      tau: Polyak rate of the target network (`target_update="polyak"`).
      max_grad_norm: global gradient-norm clip.
      reward_scale: multiplies rewards in the targets.
      opt_eps: optimiser epsilon (Adam/RAdam/RMSprop).
      rmsprop_decay: RMSprop's squared-gradient decay (PyMARL's `optim_alpha`).
    """

    lr: Any = 1e-3
    gamma: Any = 0.99
    td_lambda: Any = 0.6
    eps_start: Any = 1.0
    eps_finish: Any = 0.05
    eps_anneal_steps: Any = 100_000.0
    tau: Any = 0.005
    max_grad_norm: Any = 10.0
    reward_scale: Any = 1.0
    opt_eps: Any = 1e-8
    rmsprop_decay: Any = 0.99


@struct.dataclass
class QState:
    """Everything that changes while training (all leaves are arrays; checkpointable)."""

    params: Any  # {"agent": ..., "mixer": ...}; agent params [A, ...] when independent
    target_params: Any
    opt_state: Any
    replay: ReplayState  # leaves [C, L, ...]
    env_steps: Array  # [] int32 environment steps collected
    grad_steps: Array  # [] int32 gradient steps taken
    num_updates: Array  # [] int32


#: what every published QMIX configuration below shares (PyMARL lineage): double-Q targets, hard
#: target copies every 200 gradient steps, 2-layer hypernetworks, agent ids, grad clip 10.
_PYMARL_COMMON = dict(
    double_q=True,
    target_update="hard",
    target_update_interval=200,
    hypernet_layers=2,
    hypernet_hidden=64,
    parameter_mode="shared_id",
    batch_size=32,
    buffer_size=5000,
    target="one_step",
)

#: named published configurations: (QConfig overrides, QHParams overrides, source).
PRESETS: dict[str, tuple[dict[str, Any], dict[str, Any], str]] = {
    "pymarl": (
        {**_PYMARL_COMMON, "optimizer": "rmsprop", "recurrent": True},
        dict(
            lr=5e-4,
            opt_eps=1e-5,
            rmsprop_decay=0.99,
            max_grad_norm=10.0,
            gamma=0.99,
            eps_anneal_steps=50_000.0,
        ),  # fmt: skip
        "PyMARL (Samvelyan et al. 2019) src/config/{default,algs/qmix}.yaml: RMSprop, 1-step "
        "double-Q targets, target copied every 200 episodes (one gradient step per episode).",
    ),
    "epymarl": (
        {**_PYMARL_COMMON, "optimizer": "adam", "recurrent": False, "buffer_size": 40_000},
        dict(lr=5e-4, max_grad_norm=10.0, gamma=0.99, eps_anneal_steps=50_000.0),
        "EPyMARL (Papoudakis et al. 2021) src/config/algs/qmix.yaml: Adam, feed-forward agents, "
        "buffer 40k episodes (its reward standardisation is not reproduced; use reward_scale).",
    ),
    "pymarl2": (
        {
            **_PYMARL_COMMON,
            "optimizer": "adam",
            "recurrent": True,
            "batch_size": 128,
            "target": "lambda",
        },  # fmt: skip
        dict(lr=1e-3, td_lambda=0.6, max_grad_norm=10.0, gamma=0.99, eps_anneal_steps=100_000.0),
        "PyMARL2 (Hu et al. 2021) src/config/algs/qmix.yaml: Adam lr 1e-3, TD(lambda=0.6), "
        "batch 128, epsilon annealed over 100k steps. The marljax defaults.",
    ),
    "jaxmarl": (
        {
            **_PYMARL_COMMON,
            "optimizer": "radam",
            "recurrent": True,
            "hidden_sizes": (64,),
            "gru_size": 64,
            "hypernet_hidden": 128,
            "mixer_init_scale": 0.001,
            "learning_starts": 10_000,
        },  # fmt: skip
        dict(lr=5e-3, max_grad_norm=25.0, gamma=0.9, eps_finish=0.05),
        "JaxMARL (Rutherford et al. 2024) baselines/QLearning/config/alg/ql_rnn_mpe.yaml: RAdam "
        "lr 5e-3 (its linear decay: set lr_decay_steps to the run's gradient steps), gamma 0.9, "
        "grad clip 25, target copied every 200 updates (one gradient step per update), epsilon "
        "annealed over 10% of the run (set eps_anneal_steps).",
    ),
}


def preset(name: str) -> tuple[dict[str, Any], QHParams]:
    """A published configuration: `(QConfig overrides, QHParams)`; see `PRESETS`."""
    config, values = common.lookup_preset(PRESETS, name)
    return config, QHParams(**values)


def _choice(name: str, value: Any, choices: tuple) -> None:
    common.check_choice(f"QConfig.{name}", value, choices)


class QNetwork(nn.Module):
    """MLP torso, optional GRU, linear Q head: `(carry, xs, resets) -> (carry, (q, hidden))`.

    `xs [T, B, D]`, `resets [T, B]`, `carry [B, H]`; `q [T, B, N]` and `hidden [T, B, H]` (the
    GRU state after each step; the torso output when feed-forward, unused).
    """

    hidden_sizes: tuple[int, ...]
    activation: str
    num_actions: int
    recurrent: bool
    gru_size: int

    @nn.compact
    def __call__(self, carry: Array, xs: Array, resets: Array):
        h = MLP(self.hidden_sizes, self.activation)(xs)
        if self.recurrent:
            carry, h = RecurrentCore(self.gru_size)(carry, h, resets)
        q = nn.Dense(self.num_actions, kernel_init=orthogonal(1.0), name="q_head")(h)
        return carry, (q, h)


def masked_argmax(q: Array, mask: Array) -> Array:
    """`argmax` over the last axis among legal actions (`mask` true)."""
    return jnp.argmax(jnp.where(mask, q, -jnp.inf), axis=-1)


def epsilon(hparams: QHParams, env_steps: Array) -> Array:
    """Linear epsilon schedule from `eps_start` to `eps_finish` over `eps_anneal_steps` steps."""
    frac = jnp.clip(env_steps / jnp.maximum(hparams.eps_anneal_steps, 1.0), 0.0, 1.0)
    return hparams.eps_start + frac * (hparams.eps_finish - hparams.eps_start)


def next_q(
    next_step_q: Callable[[Any, Array, Array], Array],
    params: Any,
    q: Array,
    hidden: Array,
    xs_next: Array,
    truncated: Array,
) -> Array:
    """Q of the observation after each step of a sequence, read from the unroll where it can be.

    `next_step_q(params, hidden, xs_next)` evaluates the network one step from the state after
    each step (`hidden [L, B, ...]`) on the observation after it (`xs_next [L, B, ...]`). Inside
    a sequence that observation is step `t + 1`'s input unless an episode ended at `t`, so the
    unroll's own `q [L, B, ...]` already holds it at `t + 1`; where the episode was terminated
    the value is multiplied by a zero discount anyway. Only the last step, and steps cut by a
    time limit (`truncated [L, B]`), need the final observation's Q. A batch with no truncation
    before its last step (e.g. one episode per sequence) evaluates the last step alone, 1/L of
    the general branch's work; the general branch runs only for batches that need it (a real
    branch under `vmap` too, see `any_across_vmap`). No gradient flows through the result.

    Returns:
      `[L, B, ...]`: equal to `next_step_q(params, hidden, xs_next)` wherever an episode was not
      terminated (everywhere when the batch takes the general branch).
    """
    params, q, hidden = jax.lax.stop_gradient((params, q, hidden))

    def general(_):
        return next_step_q(params, hidden, xs_next)

    def common_case(_):
        last = next_step_q(params, hidden[-1:], xs_next[-1:])
        return jnp.concatenate([q[1:], last], axis=0)

    mid_cut = any_across_vmap(jnp.any(truncated[:-1]))
    return jax.lax.cond(mid_cut, general, common_case, None)


def make_q_learner(
    config: QConfig,
    env: Environment,
    env_params: EnvParams | None = None,
    *,
    data_axis: str | None = None,
) -> Agent:
    """Build an IQL / VDN / QMIX agent for `env` (discrete actions).

    Args:
      config: static structure.
      env: the environment (only its spaces, number of agents and `max_steps` are read).
      env_params: params used to read the spaces (default: `env.default_params()`).
      data_axis: for data-parallel learners (`marljax.distributed.data_parallel_train`, which
        sets it through `Agent.data_parallel` with `batch_size` and `buffer_size` divided by the
        number of devices): the mapped device axis. Each device keeps a replay buffer of its
        own environments and samples its share of every batch; gradients are averaged over the
        axis and the environment-step counter (epsilon schedule, `learning_starts`) counts
        every device's steps.

    Returns:
      An `Agent`. `act` is epsilon-greedy (pass `hparams.replace(eps_start=0., eps_finish=0.)`
      to act greedily); its `policy_info` is `{"q": [E, A, N], "carry": [E, A, H]}` (the carry
      given to `act`, stored for replay; `[E, A, 1]` zeros when feed-forward).

    Raises:
      ValueError: continuous actions, a mixer on an env whose global state is empty, a sequence
        longer than the episode cap.
    """
    env_params = env.default_params() if env_params is None else env_params
    A = env.num_agents
    act_space = env.action_space(env_params)
    if not isinstance(act_space, spaces.Discrete):
        raise ValueError(
            f"{config.mixer} learner needs discrete actions; {env.name} has {act_space}"
        )
    N = act_space.n
    obs_space = env.observation_space(env_params)
    state_space = env.global_state_space(env_params)
    obs_rank, state_rank = len(obs_space.shape), len(state_space.shape)
    if config.mixer == "qmix" and state_space.flat_dim == 0:
        raise ValueError(
            f"mixer='qmix' conditions on the global state, but {env.name} has an empty global "
            "state; use mixer='vdn' or 'none', or give the env a global state"
        )
    max_steps = int(env_params.max_steps)
    L = int(config.sequence_len)
    if L > max_steps:
        raise ValueError(
            f"QConfig.sequence_len = {L} is longer than the episode cap of {env.name} "
            f"(max_steps = {max_steps}); use a sequence_len <= {max_steps}"
        )
    add_id = config.parameter_mode == "shared_id"
    independent = config.parameter_mode == "independent"
    H = config.gru_size if config.recurrent else 1
    in_dim = obs_space.flat_dim + (A if add_id else 0)
    net = QNetwork(config.hidden_sizes, config.activation, N, config.recurrent, H)
    mixer = QMixer(
        config.mixer_embed_dim,
        config.hypernet_hidden,
        config.hypernet_layers,
        config.positive_map,
        config.mixer_init_scale,
    )
    replay = make_replay(config.buffer_size, config.batch_size)

    def inputs(obs: Array) -> Array:
        return common.agent_inputs(obs, obs_rank, A, add_id)

    def flat_state(gs: Array) -> Array:
        return gs.reshape(*gs.shape[: gs.ndim - state_rank], -1).astype(jnp.float32)

    def apply_agents(params, carry, xs, resets):
        """`xs [T, B, A, D]` -> `(carry [B, A, H], (q [T, B, A, N], hidden [T, B, A, H']))`."""
        return common.apply_over_agents(net.apply, params, carry, xs, resets, independent)

    def next_step_q(params, hidden: Array, xs_next: Array) -> Array:
        """Q of the observation after each step, read from the state after that step.

        `hidden [T, B, A, H]` (GRU state after step t), `xs_next [T, B, A, D]` -> `[T, B, A, N]`.
        At non-final steps this equals the next step's Q in the same unroll; at episode ends it
        is the Q of the final observation (for bootstrapping at truncation).
        """
        T, B = xs_next.shape[:2]
        carry = hidden.reshape(T * B, A, -1) if config.recurrent else jnp.zeros((T * B, A, 1))
        _, (q, _) = apply_agents(
            params,
            carry,
            xs_next.reshape(1, T * B, A, -1),
            jnp.zeros((1, T * B), bool),
        )
        return q.reshape(T, B, A, N)

    def mix(mixer_params, q_a: Array, gs: Array) -> Array:
        if config.mixer == "vdn":
            return vdn_mix(q_a)
        return mixer.apply(mixer_params, q_a, flat_state(gs))

    def make_optimizer(hp: QHParams, grad_steps: Array) -> optax.GradientTransformation:
        # Built inside traced code from traced hparams; the state structure never depends on them.
        lr = hp.lr
        if config.lr_decay_steps:
            lr = lr * jnp.maximum(1.0 - grad_steps / config.lr_decay_steps, 0.0)
        if config.optimizer == "adam":
            scale = optax.scale_by_adam(eps=hp.opt_eps)
        elif config.optimizer == "radam":
            scale = optax.scale_by_radam(eps=hp.opt_eps)
        else:
            scale = optax.scale_by_rms(decay=hp.rmsprop_decay, eps=hp.opt_eps)
        return optax.chain(
            optax.clip_by_global_norm(hp.max_grad_norm), scale, optax.scale_by_learning_rate(lr)
        )

    def example_item() -> dict[str, Any]:
        """One stored sequence (leaves `[L, ...]`) and its start carry."""
        obs_dtype = obs_space.dtype
        zeros = lambda *s, dtype=jnp.float32: jnp.zeros(s, dtype)  # noqa: E731
        return {
            "obs": zeros(L, A, *obs_space.shape, dtype=obs_dtype),
            "mask": zeros(L, A, N, dtype=bool),
            "state": zeros(L, *state_space.shape),
            "reset": zeros(L, dtype=bool),
            "actions": zeros(L, A, dtype=jnp.int32),
            "reward": zeros(L, A),
            "terminated": zeros(L, dtype=bool),
            "truncated": zeros(L, dtype=bool),
            "next_obs": zeros(L, A, *obs_space.shape, dtype=obs_dtype),
            "next_state": zeros(L, *state_space.shape),
            "next_mask": zeros(L, A, N, dtype=bool),
            "carry": zeros(A, H),
        }

    # ---------------------------------------------------------------- init / act
    def init_agent(key: Array) -> Any:
        return net.init(key, jnp.zeros((1, H)), jnp.zeros((1, 1, in_dim)), jnp.zeros((1, 1), bool))

    def init(key: Array, hparams: QHParams) -> QState:
        key_agent, key_mixer = jax.random.split(key)
        agent_params = common.init_per_agent(init_agent, key_agent, A, independent)
        mixer_params = {}
        if config.mixer == "qmix":
            mixer_params = mixer.init(
                key_mixer, jnp.zeros((1, A)), jnp.zeros((1, state_space.flat_dim))
            )
        params = {"agent": agent_params, "mixer": mixer_params}
        return QState(
            params=params,
            target_params=params,
            opt_state=make_optimizer(hparams, jnp.int32(0)).init(params),
            replay=replay.init(example_item()),
            env_steps=jnp.int32(0),
            grad_steps=jnp.int32(0),
            num_updates=jnp.int32(0),
        )

    def initial_carry(num_envs: int) -> Array:
        return jnp.zeros((num_envs, A, H), jnp.float32)

    def act(state: QState, carry: Array, observation: Observation, key: Array, hparams: QHParams):
        new_carry, (q, _) = apply_agents(
            state.params["agent"], carry, inputs(observation.obs)[None], observation.reset[None]
        )
        q = q[0]  # [E, A, N]
        mask = observation.action_mask
        greedy = masked_argmax(q, mask)
        key_explore, key_random = jax.random.split(key)
        random = jax.random.categorical(key_random, jnp.where(mask, 0.0, -jnp.inf))
        explore = jax.random.uniform(key_explore, greedy.shape) < epsilon(hparams, state.env_steps)
        actions = jnp.where(explore, random, greedy).astype(jnp.int32)
        if not config.recurrent:
            new_carry = carry
        return actions, new_carry, {"q": q, "carry": carry}

    # ---------------------------------------------------------------- learning
    def to_items(traj: Trajectory) -> dict[str, Any]:
        """`[T, E, ...]` rollout -> `K * E` sequences `[L, ...]` (K = T / L), plus start carries."""
        T, E = traj.reward.shape[:2]
        K = T // L
        o = traj.observation
        steps = {
            "obs": o.obs,
            "mask": o.action_mask,
            "state": o.global_state,
            "reset": o.reset,
            "actions": traj.actions,
            "reward": traj.reward,
            "terminated": traj.terminated,
            "truncated": traj.truncated,
            "next_obs": traj.next_obs,
            "next_state": traj.next_global_state,
            "next_mask": traj.next_action_mask,
        }

        def chunk(x):  # [T, E, ...] -> [K * E, L, ...]
            x = x.reshape(K, L, E, *x.shape[2:])
            return jnp.swapaxes(x, 1, 2).reshape(K * E, L, *x.shape[3:])

        items = jax.tree.map(chunk, steps)
        carry = traj.policy_info["carry"]  # [T, E, A, H]
        items["carry"] = carry[::L].reshape(K * E, A, H)
        return items

    def loss_fn(params, target_params, batch, hp: QHParams):
        b = jax.tree.map(
            lambda x: jnp.swapaxes(x, 0, 1), {k: v for k, v in batch.items() if k != "carry"}
        )
        x, x_next = inputs(b["obs"]), inputs(b["next_obs"])  # [L, B, A, D]
        carry0 = batch["carry"]  # [B, A, H]
        _, (q, hidden) = apply_agents(params["agent"], carry0, x, b["reset"])
        chosen = jnp.take_along_axis(q, b["actions"][..., None], axis=-1)[..., 0]  # [L, B, A]
        target_agent = jax.lax.stop_gradient(target_params["agent"])
        if config.recurrent:
            # Next-step Q read from the online and target unrolls (see `next_q`).
            _, (q_t, hidden_t) = apply_agents(target_agent, carry0, x, b["reset"])
            q_next_t = next_q(next_step_q, target_agent, q_t, hidden_t, x_next, b["truncated"])
            if config.double_q:
                q_next_online = next_q(
                    next_step_q, params["agent"], q, hidden, x_next, b["truncated"]
                )
        else:  # feed-forward: one pass over the next observations per network
            q_next_t = next_step_q(target_agent, hidden, x_next)
            q_next_online = (
                next_step_q(params["agent"], hidden, x_next) if config.double_q else None
            )
        if config.double_q:
            a_next = masked_argmax(jax.lax.stop_gradient(q_next_online), b["next_mask"])
        else:
            a_next = masked_argmax(q_next_t, b["next_mask"])
        v_next = jnp.take_along_axis(q_next_t, a_next[..., None], axis=-1)[..., 0]  # [L, B, A]

        reward = b["reward"] * hp.reward_scale  # [L, B, A]
        if config.mixer == "none":
            pred, r = chosen, reward
        else:
            pred = mix(params["mixer"], chosen, b["state"])  # [L, B]
            v_next = mix(target_params["mixer"], v_next, b["next_state"])
            r = reward.mean(-1) if config.team_reward == "mean" else reward.sum(-1)
        shape = r.shape
        expand = (lambda z: z[..., None]) if config.mixer == "none" else (lambda z: z)
        discount = jnp.broadcast_to(expand(hp.gamma * (1.0 - b["terminated"])), shape)
        done = jnp.broadcast_to(expand(jnp.logical_or(b["terminated"], b["truncated"])), shape)
        v_next = jax.lax.stop_gradient(v_next)
        if config.target == "lambda":
            targets = losses.lambda_returns(r, discount, v_next, hp.td_lambda, done_t=done)
        elif config.target == "n_step":
            targets = losses.n_step_returns(r, discount, v_next, config.n_steps, done_t=done)
        else:
            targets = jax.lax.stop_gradient(r + discount * v_next)
        td = pred - targets
        loss = jnp.mean(td**2)
        return loss, {"loss": loss, "q_taken": jnp.mean(chosen), "target_mean": jnp.mean(targets)}

    def gradient_step(carry, key, hp: QHParams, replay_state: ReplayState):
        params, target_params, opt_state, grad_steps = carry
        batch = replay.sample(replay_state, key)
        (_, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            params, target_params, batch, hp
        )
        grads = common.data_mean(grads, data_axis)
        tx = make_optimizer(hp, grad_steps)
        updates, opt_state = tx.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        grad_steps = grad_steps + 1
        if config.target_update == "polyak":
            target_params = optax.incremental_update(params, target_params, hp.tau)
        else:
            copy = grad_steps % config.target_update_interval == 0
            target_params = jax.tree.map(lambda p, t: jnp.where(copy, p, t), params, target_params)
        metrics["grad_norm"] = optax.global_norm(grads)
        return (params, target_params, opt_state, grad_steps), metrics

    def update(state: QState, traj: Trajectory, hparams: QHParams, key: Array):
        T, E = traj.reward.shape[:2]
        replay_state = replay.add(state.replay, to_items(traj))
        env_steps = state.env_steps + T * E * common.data_shards(data_axis)
        carry = (state.params, state.target_params, state.opt_state, state.grad_steps)
        keys = jax.random.split(key, config.gradient_steps)

        def learn(c):
            step = lambda c, k: gradient_step(c, k, hparams, replay_state)  # noqa: E731
            c, metrics = jax.lax.scan(step, c, keys)
            return c, jax.tree.map(jnp.mean, metrics)

        def skip(c):
            # Zeros, not NaN, so that the opt-in non-finite guard only fires on real NaNs;
            # `metrics["learning"]` says whether gradient steps were taken.
            zero = jnp.float32(0.0)
            return c, {"loss": zero, "q_taken": zero, "target_mean": zero, "grad_norm": zero}

        ready = jnp.logical_and(
            replay.can_sample(replay_state), env_steps >= config.learning_starts
        )
        (params, target_params, opt_state, grad_steps), metrics = jax.lax.cond(
            ready, learn, skip, carry
        )
        metrics["learning"] = ready.astype(jnp.float32)
        metrics["epsilon"] = epsilon(hparams, state.env_steps)
        metrics["buffer_size"] = replay_state.size
        new_state = QState(
            params=params,
            target_params=target_params,
            opt_state=opt_state,
            replay=replay_state,
            env_steps=env_steps,
            grad_steps=grad_steps,
            num_updates=state.num_updates + 1,
        )
        return new_state, metrics

    def check_batch(num_envs: int, rollout_len: int) -> None:
        if rollout_len % L:
            raise ValueError(
                f"rollout_len = {rollout_len} is not a multiple of the replay sequence_len = {L}"
                f" (QConfig.sequence_len); use rollout_len = {L * max(1, rollout_len // L)}"
                f" or a sequence_len dividing {rollout_len}"
            )

    agent = Agent(
        init=init,
        initial_carry=initial_carry,
        act=act,
        update=update,
        default_hparams=QHParams,
        get_params=lambda s: s.params,
        check_batch=check_batch,
        data_parallel=lambda axis, num_shards: make_q_learner(
            _shard_config(config, num_shards), env, env_params, data_axis=axis
        ),
    )
    return agent


def _shard_config(config: QConfig, num_shards: int) -> QConfig:
    """`config` for one of `num_shards` data-parallel learners: 1/num_shards of batch and buffer."""
    for name in ("batch_size", "buffer_size"):
        value = getattr(config, name)
        if value % num_shards:
            lower = value // num_shards * num_shards
            choices = sorted({max(lower, num_shards), lower + num_shards})
            raise ValueError(
                f"QConfig.{name} = {value} is not divisible by the {num_shards} data-parallel "
                f"devices; use e.g. {name} = {' or '.join(map(str, choices))}"
            )
    return dataclasses.replace(
        config,
        batch_size=config.batch_size // num_shards,
        buffer_size=config.buffer_size // num_shards,
    )


def iql(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """Independent Q-learning (no mixer)."""
    return make_q_learner(QConfig(mixer="none", **config), env, env_params)


def vdn(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """VDN: additive value decomposition."""
    return make_q_learner(QConfig(mixer="vdn", **config), env, env_params)


def qmix(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """QMIX: monotonic value decomposition conditioned on the global state."""
    return make_q_learner(QConfig(mixer="qmix", **config), env, env_params)


# ----------------------------------------------------------------------------- diagnostics


def q_table(
    agent_config: QConfig,
    env: Environment,
    state: QState,
    observation: Observation,
    env_params: EnvParams | None = None,
) -> dict[str, np.ndarray]:
    """Per-agent Q values and the joint Q_tot table at one observation.

    Feed-forward agents only (a recurrent agent's values depend on its history; pass the carry
    through your own unroll instead).

    Args:
      agent_config: the `QConfig` the agent was built with.
      env: the environment.
      state: the trained `QState` (one run; no seed axis).
      observation: an `Observation` of ONE environment (leaves without the env axis, e.g. from
        `env.reset`).
      env_params: params the agent was built with.

    Returns:
      `{"q": [A, N] per-agent values, "q_tot": [N] * A joint table}` as numpy arrays (for IQL,
      `q_tot` is the sum of the agents' values, shown for comparison).
    """
    if agent_config.recurrent:
        raise ValueError("q_table needs a feed-forward agent (recurrent=False)")
    env_params = env.default_params() if env_params is None else env_params
    A = env.num_agents
    N = env.action_space(env_params).n
    obs_rank = len(env.observation_space(env_params).shape)
    x = common.agent_inputs(
        observation.obs, obs_rank, A, agent_config.parameter_mode == "shared_id"
    )
    net = QNetwork(
        agent_config.hidden_sizes, agent_config.activation, N, False, agent_config.gru_size
    )
    independent = agent_config.parameter_mode == "independent"
    _, (q, _) = common.apply_over_agents(
        net.apply,
        state.params["agent"],
        jnp.zeros((1, A, 1)),
        x[None, None],
        jnp.zeros((1, 1), bool),
        independent,
    )
    q = q[0, 0]  # [A, N]
    joint = jnp.stack(jnp.meshgrid(*[jnp.arange(N)] * A, indexing="ij"), -1).reshape(-1, A)
    q_joint = q[jnp.arange(A), joint]  # [N^A, A]
    if agent_config.mixer == "qmix":
        mixer = QMixer(
            agent_config.mixer_embed_dim,
            agent_config.hypernet_hidden,
            agent_config.hypernet_layers,
            agent_config.positive_map,
            agent_config.mixer_init_scale,
        )
        gs = observation.global_state.reshape(-1).astype(jnp.float32)
        q_tot = mixer.apply(
            state.params["mixer"], q_joint, jnp.broadcast_to(gs, (len(joint), gs.size))
        )
    else:
        q_tot = vdn_mix(q_joint)
    return {"q": np.asarray(q), "q_tot": np.asarray(q_tot).reshape((N,) * A)}


def first_step_q_table(
    agent_config: QConfig,
    env: Environment,
    state: QState,
    env_params: EnvParams | None = None,
    key: Array | None = None,
) -> dict[str, np.ndarray]:
    """`q_table` at the first observation of an episode (e.g. a one-step matrix game)."""
    env_params = env.default_params() if env_params is None else env_params
    key = jax.random.PRNGKey(0) if key is None else key
    _, ts = env.reset(key, env_params)
    observation = Observation(ts.obs, ts.action_mask, ts.global_state, jnp.array(True))
    return q_table(agent_config, env, state, observation, env_params)


def format_q_table(table: dict[str, np.ndarray], decimals: int = 2) -> str:
    """A printable rendering of `q_table`'s output (2-agent joint tables as a grid)."""
    q, q_tot = table["q"], table["q_tot"]
    lines = ["per-agent Q values:"]
    for i, row in enumerate(q):
        lines.append(f"  agent {i}: " + "  ".join(f"{v:8.{decimals}f}" for v in row))
    if q_tot.ndim == 2:
        lines.append("Q_tot[a0, a1] (rows: agent 0's action, columns: agent 1's):")
        lines.append("        " + "".join(f"{j:>9d}" for j in range(q_tot.shape[1])))
        for i, row in enumerate(q_tot):
            lines.append(f"  {i:>4d}  " + "".join(f"{v:9.{decimals}f}" for v in row))
    else:
        lines.append(f"Q_tot over {q_tot.ndim} agents' joint actions:")
        for idx in np.ndindex(q_tot.shape):
            lines.append(f"  {idx}: {q_tot[idx]:.{decimals}f}")
    best = np.unravel_index(np.argmax(q_tot), q_tot.shape)
    lines.append(f"greedy joint action: {tuple(int(i) for i in best)}")
    return "\n".join(lines)


__all__ = [
    "PRESETS",
    "QConfig",
    "QHParams",
    "QNetwork",
    "QState",
    "epsilon",
    "first_step_q_table",
    "format_q_table",
    "iql",
    "make_q_learner",
    "masked_argmax",
    "preset",
    "q_table",
    "qmix",
    "vdn",
]
