"""PPO for many agents: IPPO and MAPPO as ONE implementation with a critic-input switch.

- Decentralised actors: each agent's policy sees only its own observation (plus a one-hot agent
  id in the `shared_id` parameter mode).
- Critic input: `"local"` (own observation: IPPO, de Witt et al. 2020) or `"global"` (the
  environment's global state: MAPPO, Yu et al. 2022).
- Parameter modes: `shared`, `shared_id` (shared + one-hot agent id) and `independent` (one
  parameter pytree with a leading agent axis, applied with `vmap`).
- Discrete actions (masked categorical) and continuous actions (diagonal Gaussian, optionally
  tanh-squashed and rescaled to the action box).
- Feed-forward or GRU policies through `marljax.networks.RecurrentCore` (carry reset at episode
  starts); recurrent training replays whole rollout sequences, minibatched over environments.
- GAE that bootstraps through truncation but not termination (`marljax.losses.gae`), optional
  advantage normalisation, optional value normalisation (running mean/std, MAPPO's ValueNorm),
  optional clipped value loss.
- BN-MAPPO (`graph != "none"`, discrete feed-forward policies): a Bayesian-network joint policy
  (`marljax.agents.bn`, Chen et al. 2023) where agents act in a DAG's topological order and see
  their parents' actions; the PPO ratio of agent `i` uses its conditional log-probability (plus,
  for the learned graph, its share of the graph's log-probability). With the empty graph this
  path gives exactly MAPPO's numbers.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax import struct

from marljax import distributions, losses
from marljax.agents import bn, common
from marljax.agents.base import Agent, Observation, Trajectory
from marljax.core import spaces
from marljax.core.types import Environment, EnvParams
from marljax.networks import MLP, RecurrentCore

Array = jax.Array

ParameterMode = Literal["shared", "shared_id", "independent"]
CriticInput = Literal["local", "global"]
GRAPHS = ("none", "empty", "chain", "line", "full", "learned")


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """Static structure of a PPO-family agent (shapes and loop lengths; not traced).

    Attributes:
      critic_input: "local" (IPPO) or "global" (MAPPO).
      parameter_mode: "shared", "shared_id" (shared + one-hot agent id) or "independent".
      hidden_sizes: widths of the actor and critic MLP torsos.
      activation: torso activation (tanh, relu, elu, gelu, silu).
      recurrent: use a GRU core before the MLP torso.
      gru_size: width of the GRU.
      num_epochs: passes over each rollout.
      num_minibatches: minibatches per epoch (over environments when recurrent, else samples).
      normalize_advantages: standardise advantages per minibatch.
      value_norm: learn values in a running standardised scale (MAPPO's ValueNorm).
      clip_value_loss: use the PPO clipped value loss (clip range `hparams.value_clip_eps`).
      tanh_squash: continuous actions through tanh, rescaled to the action box.
      graph: joint-policy graph. "none": independent actors (plain MAPPO/IPPO); "empty",
        "chain" (alias "line"), "full": a fixed Bayesian-network DAG (`marljax.agents.bn`);
        "learned": a context-aware DAG sampled from the global state; or a user-given `[A, A]`
        parent mask (nested tuples, `mask[i][j] = 1` when agent `j` is a parent of agent `i`).
      graph_threshold_start, graph_threshold_end, graph_anneal_updates: the edge threshold
        rises linearly from start to end over that many updates (edges whose probability does
        not exceed it are pruned; 1.0 prunes every edge). 0 updates: constant at start.
    """

    critic_input: CriticInput = "global"
    parameter_mode: ParameterMode = "shared_id"
    hidden_sizes: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    recurrent: bool = False
    gru_size: int = 64
    num_epochs: int = 4
    num_minibatches: int = 4
    normalize_advantages: bool = True
    value_norm: bool = False
    clip_value_loss: bool = True
    tanh_squash: bool = False
    graph: Any = "none"
    graph_threshold_start: float = 0.0
    graph_threshold_end: float = 0.0
    graph_anneal_updates: int = 0

    def __post_init__(self):
        common.check_choice("critic_input", self.critic_input, ("local", "global"))
        common.check_parameter_mode(self.parameter_mode)
        for name in ("num_epochs", "num_minibatches", "gru_size"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"PPOConfig.{name} must be >= 1, got {getattr(self, name)}")
        if not self.hidden_sizes or any(int(h) < 1 for h in self.hidden_sizes):
            raise ValueError(
                f"PPOConfig.hidden_sizes must be positive widths, got {self.hidden_sizes}"
            )
        if isinstance(self.graph, str):
            common.check_choice("graph", self.graph, GRAPHS)
        else:
            try:  # a user-given parent mask: malformed masks and cycles fail here
                bn.graph_from_parents(self.graph)
            except (ValueError, TypeError) as err:
                raise ValueError(f"PPOConfig.graph: {err}") from None
            object.__setattr__(self, "graph", tuple(tuple(int(v) for v in r) for r in self.graph))
        try:
            bn.check_anneal(
                self.graph_threshold_start, self.graph_threshold_end, self.graph_anneal_updates
            )
        except ValueError as err:
            raise ValueError(
                f"PPOConfig.graph_threshold_start, graph_threshold_end, graph_anneal_updates: {err}"
            ) from None
        if self.uses_graph and self.recurrent:
            raise ValueError("PPOConfig.graph (BN joint policy) needs recurrent=False")

    @property
    def uses_graph(self) -> bool:
        """A Bayesian-network joint policy (BN-MAPPO) rather than independent actors."""
        return not (isinstance(self.graph, str) and self.graph == "none")


@struct.dataclass
class PPOHParams:
    """Traced hyperparameters of PPO (each may be vmapped over in a sweep).

    Defaults follow the MAPPO paper's (Yu et al. 2022) recommendations where they apply.
    """

    lr: Any = 5e-4
    gamma: Any = 0.99
    gae_lambda: Any = 0.95
    clip_eps: Any = 0.2
    value_clip_eps: Any = 0.2
    ent_coef: Any = 0.01
    vf_coef: Any = 0.5
    max_grad_norm: Any = 0.5
    adam_eps: Any = 1e-5


@struct.dataclass
class PPOState:
    """Everything that changes during PPO training (all leaves are arrays)."""

    actor_params: Any  # leading [A] axis in the independent mode
    critic_params: Any
    opt_state: Any
    value_norm: losses.RunningMeanStd  # [] running statistics of returns
    num_updates: Array  # [] int32


@struct.dataclass
class PPOCarry:
    """Recurrent state while acting: `[E, A, H]` each (empty arrays when feed-forward)."""

    actor: Array
    critic: Array


class _Net(nn.Module):
    """Optional GRU core, MLP torso and a linear head."""

    hidden_sizes: tuple[int, ...]
    activation: str
    out_dim: int
    out_scale: float
    recurrent: bool
    gru_size: int

    @nn.compact
    def __call__(self, carry: Array, xs: Array, resets: Array) -> tuple[Array, Array]:
        """`xs [T, B, D]`, `resets [T, B]`, `carry [B, H]` -> `(carry, out [T, B, out_dim])`."""
        if self.recurrent:
            carry, xs = RecurrentCore(self.gru_size)(carry, xs, resets)
        out = MLP(self.hidden_sizes, self.activation, self.out_dim, self.out_scale)(xs)
        return carry, out


def make_ppo(
    config: PPOConfig,
    env: Environment,
    env_params: EnvParams | None = None,
    *,
    data_axis: str | None = None,
) -> Agent:
    """Build a PPO-family agent for `env` (IPPO if `critic_input="local"`, MAPPO if "global").

    Args:
      config: static structure.
      env: the environment (only its spaces and number of agents are read).
      env_params: params used to read the spaces (default: `env.default_params()`).
      data_axis: for data-parallel learners (`marljax.distributed.data_parallel_train`, which
        sets it through `Agent.data_parallel`): the mapped device axis whose shards together
        hold the rollout. Gradients, advantage normalisation and value-normalisation
        statistics are averaged over it, so every shard takes the whole batch's step.

    Returns:
      An `Agent` (see `marljax.agents.base`). Its `act` returns `policy_info = {"log_prob": [E, A],
      "value": [E, A], "critic_carry": [E, A, H]}`.
    """
    env_params = env.default_params() if env_params is None else env_params
    A = env.num_agents
    act_space = env.action_space(env_params)
    obs_dim = env.observation_space(env_params).flat_dim
    state_dim = env.global_state_space(env_params).flat_dim
    discrete = isinstance(act_space, spaces.Discrete)
    if not discrete and not isinstance(act_space, spaces.Box):
        raise NotImplementedError(f"PPO supports Discrete and Box action spaces, got {act_space}")
    act_dim = act_space.n if discrete else act_space.flat_dim
    add_id = config.parameter_mode == "shared_id"
    independent = config.parameter_mode == "independent"
    actor_in = obs_dim + (A if add_id else 0)
    critic_in = (obs_dim if config.critic_input == "local" else state_dim) + (A if add_id else 0)
    H = config.gru_size if config.recurrent else 0

    actor_net = _Net(
        config.hidden_sizes, config.activation, act_dim, 0.01, config.recurrent, max(H, 1)
    )
    critic_net = _Net(config.hidden_sizes, config.activation, 1, 1.0, config.recurrent, max(H, 1))
    use_graph = config.uses_graph
    learned = config.graph == "learned" if isinstance(config.graph, str) else False
    if use_graph and not discrete:
        raise ValueError("PPOConfig.graph (BN joint policy) needs a Discrete action space")
    if use_graph:
        parent_net = _Net(config.hidden_sizes, config.activation, act_dim, 0.01, False, 1)
        graph_net = bn.GraphNet(A, config.hidden_sizes, config.activation)
        anneal = bn.AnnealSchedule(
            config.graph_threshold_start, config.graph_threshold_end, config.graph_anneal_updates
        )
        if isinstance(config.graph, str) and not learned:
            fixed = bn.fixed_graph(config.graph, A)
        elif not learned:
            fixed = bn.graph_from_parents(config.graph)
            if fixed.parents.shape != (A, A):
                raise ValueError(
                    f"PPOConfig.graph: the parent mask must be [{A}, {A}] for {A} agents, "
                    f"got {tuple(fixed.parents.shape)}"
                )
    if not discrete:
        low = jnp.broadcast_to(jnp.asarray(act_space.low, jnp.float32), act_space.shape)
        high = jnp.broadcast_to(jnp.asarray(act_space.high, jnp.float32), act_space.shape)

    # ---------------------------------------------------------------- inputs
    obs_rank = len(env.observation_space(env_params).shape)
    state_rank = len(env.global_state_space(env_params).shape)

    def actor_inputs(obs: Array) -> Array:
        """`obs [..., A, *obs_shape]` -> `[..., A, actor_in]`."""
        return common.agent_inputs(obs, obs_rank, A, add_id)

    def critic_inputs(obs: Array, global_state: Array) -> Array:
        """-> `[..., A, critic_in]` (global state is broadcast to every agent)."""
        if config.critic_input == "local":
            return actor_inputs(obs)
        x = common.broadcast_to_agents(global_state, state_rank, A)
        return common.agent_inputs(x, 1, A, add_id)

    # ---------------------------------------------------------------- apply over agents
    def apply_agents(net: nn.Module, params: Any, carry: Array, xs: Array, resets: Array):
        """`xs [T, B, A, D]`, `carry [B, A, H]`, `resets [T, B]` -> `(carry, out [T, B, A, O])`."""
        return common.apply_over_agents(net.apply, params, carry, xs, resets, independent)

    # A global critic with shared parameters and no agent id gets the same input for every agent
    # of an env: evaluated once per env and broadcast (`common.apply_once_per_env`), 1/A of the
    # critic's work for the same numbers (JaxMARL's MAPPO evaluates it A times).
    one_critic = config.critic_input == "global" and config.parameter_mode == "shared"

    def apply_critic(params: Any, carry: Array, xs: Array, resets: Array):
        if one_critic:
            return common.apply_once_per_env(critic_net.apply, params, carry, xs, resets)
        return apply_agents(critic_net, params, carry, xs, resets)

    def distribution(actor_out: Array, mask: Array, log_std: Array):
        if discrete:
            return distributions.masked_categorical(actor_out, mask)
        if config.tanh_squash:
            return distributions.TanhGaussian(actor_out, jnp.broadcast_to(log_std, actor_out.shape))
        return distributions.diag_gaussian(actor_out, jnp.broadcast_to(log_std, actor_out.shape))

    def to_env_action(a: Array) -> Array:
        if discrete:
            return a.astype(jnp.int32)
        if config.tanh_squash:
            return low + (a + 1.0) * 0.5 * (high - low)
        return a

    def from_env_action(a: Array) -> Array:
        if discrete or not config.tanh_squash:
            return a
        return 2.0 * (a - low) / (high - low) - 1.0

    # ---------------------------------------------------------------- init
    def init_one(key: Array) -> tuple[Any, Any]:
        k_a, k_c = jax.random.split(key)
        c0 = jnp.zeros((1, max(H, 1)))
        r0 = jnp.zeros((1, 1), bool)
        actor = actor_net.init(k_a, c0, jnp.zeros((1, 1, actor_in)), r0)
        if not discrete:
            actor = {"net": actor, "log_std": jnp.zeros((act_dim,), jnp.float32)}
        critic = critic_net.init(k_c, c0, jnp.zeros((1, 1, critic_in)), r0)
        return actor, critic

    def actor_net_params(actor_params):
        if use_graph:
            return actor_params["policy"]
        return actor_params if discrete else actor_params["net"]

    def actor_log_std(actor_params):
        if discrete:
            return jnp.zeros(())
        return actor_params[
            "log_std"
        ]  # [D] shared or [A, D] independent: broadcasts over [..., A, D]

    def make_optimizer(hp: PPOHParams) -> optax.GradientTransformation:
        # Built inside traced code from traced hparams; its state structure never depends on them.
        return optax.chain(
            optax.clip_by_global_norm(hp.max_grad_norm),
            optax.scale_by_adam(eps=hp.adam_eps),
            optax.scale_by_learning_rate(hp.lr),
        )

    def init(key: Array, hparams: PPOHParams) -> PPOState:
        actor, critic = common.init_per_agent(init_one, key, A, independent)
        if use_graph:  # MAPPO's parameters stay exactly as they are, under "policy"
            actor = {
                "policy": actor,
                "parents": common.init_per_agent(
                    init_parent_net, jax.random.fold_in(key, 1), A, independent
                ),
            }
            if learned:
                actor["graph"] = graph_net.init(jax.random.fold_in(key, 2), jnp.zeros((state_dim,)))
        params = (actor, critic)
        return PPOState(
            actor_params=actor,
            critic_params=critic,
            opt_state=make_optimizer(hparams).init(params),
            value_norm=losses.running_mean_std_init(),
            num_updates=jnp.int32(0),
        )

    def initial_carry(num_envs: int) -> PPOCarry:
        return PPOCarry(
            actor=jnp.zeros((num_envs, A, max(H, 1)), jnp.float32),
            critic=jnp.zeros((num_envs, A, max(H, 1)), jnp.float32),
        )

    def value_scale(state: PPOState, v: Array) -> Array:
        return losses.unstandardize(state.value_norm, v) if config.value_norm else v

    # ---------------------------------------------------------------- BN joint policy
    def init_parent_net(key: Array) -> Any:
        x0 = jnp.zeros((1, 1, actor_in + A * act_dim))
        return parent_net.init(key, jnp.zeros((1, 1)), x0, jnp.zeros((1, 1), bool))

    def parent_logits_rows(params: Any, x: Array, inputs: Array, agent: Array) -> Array:
        """Extra logits of agent `agent[b]` of row `b`: `x [B, D]`, `inputs [B, A * N]`."""
        xs = jnp.concatenate([x, inputs], axis=-1)
        if independent:
            p = jax.tree.map(lambda q: q[agent], params)

            def one(pp, xx):
                return parent_net.apply(
                    pp, jnp.zeros((1, 1)), xx[None, None], jnp.zeros((1, 1), bool)
                )[1][0, 0]

            return jax.vmap(one)(p, xs)
        B = xs.shape[0]
        _, out = parent_net.apply(params, jnp.zeros((B, 1)), xs[None], jnp.zeros((1, B), bool))
        return out[0]

    def parent_logits_all(params: Any, x: Array, inputs: Array, resets: Array) -> Array:
        """`x [T, B, A, D]`, `inputs [T, B, A, A * N]` -> `[T, B, A, N]`."""
        xs = jnp.concatenate([x, inputs], axis=-1)
        carry = jnp.zeros((xs.shape[1], A, 1))
        return apply_agents(parent_net, params, carry, xs, resets)[1]

    def sample_graph(actor_params: Any, global_state: Array, key: Array, threshold: Array):
        """`(DAG [E, A, A] / [E, A], per-agent graph log-prob [E, A])`."""
        E = global_state.shape[0]
        if learned:
            context = global_state.reshape(E, -1).astype(jnp.float32)
            scores, edge_logits = graph_net.apply(actor_params["graph"], context)
            dag = bn.sample_dag(key, scores, edge_logits, threshold)
            return dag, bn.dag_log_prob(scores, edge_logits, dag, threshold)
        parents = bn.prune(fixed.parents, 1.0, threshold)
        dag = bn.DAG(jnp.broadcast_to(parents, (E, A, A)), jnp.broadcast_to(fixed.order, (E, A)))
        return dag, jnp.zeros((E, A))

    def bn_act(state: PPOState, x: Array, base_logits: Array, observation: Observation, key):
        """Sample the joint action of the BN policy: `x [E, A, D]`, `base_logits [E, A, N]`."""
        threshold = anneal(state.num_updates)
        if learned:  # fixed graphs use `key` exactly as MAPPO does
            key_graph, key = jax.random.split(key)
        else:
            key_graph = None
        dag, graph_lp = sample_graph(
            state.actor_params, observation.global_state, key_graph, threshold
        )
        parent_p = state.actor_params["parents"]
        actions = bn.sample_joint_actions(
            key,
            base_logits,
            lambda inputs, agent: parent_logits_rows(
                parent_p, x[jnp.arange(x.shape[0]), agent], inputs, agent
            ),
            dag,
            observation.action_mask,
        )
        log_prob, _ = bn.joint_log_prob(
            base_logits,
            lambda inputs: parent_logits_all(
                parent_p, x[None], inputs[None], jnp.zeros((1, x.shape[0]), bool)
            )[0],
            actions,
            dag.parents,
            observation.action_mask,
        )
        return actions, log_prob + graph_lp, {"parents": dag.parents, "order": dag.order}

    # ---------------------------------------------------------------- act
    def act(state: PPOState, carry: PPOCarry, observation: Observation, key: Array, hparams):
        del hparams
        x = actor_inputs(observation.obs)[None]  # [1, E, A, D]
        resets = observation.reset[None]
        a_carry, out = apply_agents(
            actor_net, actor_net_params(state.actor_params), carry.actor, x, resets
        )
        dist = distribution(out[0], observation.action_mask, actor_log_std(state.actor_params))
        graph_info = {}
        if use_graph:
            raw, log_prob, graph_info = bn_act(state, x[0], out[0], observation, key)
        elif discrete:
            raw = dist.sample(seed=key)
            log_prob = dist.log_prob(raw)
        elif config.tanh_squash:
            raw, log_prob = dist.sample_and_log_prob(key)
        else:
            raw = dist.sample(seed=key)
            log_prob = dist.log_prob(raw)
        cx = critic_inputs(observation.obs, observation.global_state)[None]
        c_carry, v = apply_critic(state.critic_params, carry.critic, cx, resets)
        info = {
            "log_prob": log_prob,
            "value": value_scale(state, v[0, ..., 0]),
            "critic_carry": c_carry,
            **graph_info,
        }
        return to_env_action(raw), PPOCarry(a_carry, c_carry), info

    # ---------------------------------------------------------------- update
    def update(state: PPOState, traj: Trajectory, hparams: PPOHParams, key: Array):
        hp = hparams
        T, E = traj.reward.shape[:2]
        info = traj.policy_info
        # V(s_{t+1}) from the post-step critic carry: equals the next step's value inside an
        # episode and is V(final observation) at episode ends (bootstrap at truncation).
        nx = critic_inputs(traj.next_obs, traj.next_global_state)  # [T, E, A, D]
        _, v_next = apply_critic(
            state.critic_params,
            info["critic_carry"].reshape(T * E, A, -1),
            nx.reshape(1, T * E, A, -1),
            jnp.zeros((1, T * E), bool),
        )
        v_next = value_scale(state, v_next.reshape(T, E, A))
        terminated = traj.terminated[..., None].astype(jnp.float32)
        done = jnp.logical_or(traj.terminated, traj.truncated)[..., None].astype(jnp.float32)
        discount = hp.gamma * (1.0 - terminated) * jnp.ones_like(traj.reward)
        done = done * jnp.ones_like(traj.reward)
        advantages, returns = losses.gae(
            traj.reward, info["value"], v_next, discount, done, hp.gae_lambda
        )
        advantages = jax.lax.stop_gradient(advantages)
        returns = jax.lax.stop_gradient(returns)
        value_norm = state.value_norm
        if config.value_norm:
            value_norm = losses.running_mean_std_update(value_norm, returns, axis_name=data_axis)
            targets = losses.standardize(value_norm, returns)
            old_values = losses.standardize(value_norm, info["value"])
        else:
            targets, old_values = returns, info["value"]

        obs = traj.observation
        actions = from_env_action(traj.actions)
        batch = {
            "x_actor": actor_inputs(obs.obs),
            "x_critic": critic_inputs(obs.obs, obs.global_state),
            "mask": obs.action_mask,
            "resets": obs.reset,
            "actions": actions,
            "old_log_prob": info["log_prob"],
            "old_values": old_values,
            "targets": targets,
            "advantages": advantages,
        }
        if use_graph:
            batch["parents"] = info["parents"]
            batch["order"] = info["order"]
            batch["context"] = obs.global_state.reshape(T, E, -1).astype(jnp.float32)
            threshold = anneal(state.num_updates)
        carry0 = traj.initial_carry
        tx = make_optimizer(hp)

        def loss_fn(params, mb, mb_carry):
            actor_p, critic_p = params
            _, out = apply_agents(
                actor_net, actor_net_params(actor_p), mb_carry.actor, mb["x_actor"], mb["resets"]
            )
            if use_graph:
                log_prob, dist = bn.joint_log_prob(
                    out,
                    lambda inputs: parent_logits_all(
                        actor_p["parents"], mb["x_actor"], inputs, mb["resets"]
                    ),
                    mb["actions"],
                    mb["parents"],
                    mb["mask"],
                )
                if learned:
                    scores, edge_logits = graph_net.apply(actor_p["graph"], mb["context"])
                    dag = bn.DAG(mb["parents"], mb["order"])
                    log_prob = log_prob + bn.dag_log_prob(scores, edge_logits, dag, threshold)
            else:
                dist = distribution(out, mb["mask"], actor_log_std(actor_p))
                log_prob = dist.log_prob(mb["actions"])
            entropy = losses.masked_mean(dist.entropy())
            _, v = apply_critic(critic_p, mb_carry.critic, mb["x_critic"], mb["resets"])
            v = v[..., 0]
            adv = mb["advantages"]
            if config.normalize_advantages:
                adv = losses.normalize(adv, axis_name=data_axis)
            pg_loss, pg_info = losses.ppo_clip_loss(log_prob, mb["old_log_prob"], adv, hp.clip_eps)
            clip = hp.value_clip_eps if config.clip_value_loss else None
            v_loss = losses.value_loss(v, mb["old_values"], mb["targets"], clip)
            total = pg_loss + hp.vf_coef * v_loss - hp.ent_coef * entropy
            metrics = {
                "policy_loss": pg_loss,
                "value_loss": v_loss,
                "entropy": entropy,
                "approx_kl": pg_info["approx_kl"],
                "clip_fraction": pg_info["clip_fraction"],
            }
            return total, metrics

        num_mb = config.num_minibatches

        def minibatches(key):
            """Shuffle into `num_mb` minibatches of sequences `[T', B', ...]`."""
            if config.recurrent:
                # Keep whole sequences; shuffle environments.
                perm = jax.random.permutation(key, E)

                def split(x):
                    x = jnp.take(x, perm, axis=1)
                    return jnp.swapaxes(x.reshape(T, num_mb, E // num_mb, *x.shape[2:]), 0, 1)

                def split_c(c):
                    c = jnp.take(c, perm, axis=0)
                    return c.reshape(num_mb, E // num_mb, *c.shape[1:])

                return jax.tree.map(split, batch), jax.tree.map(split_c, carry0)
            n = T * E
            perm = jax.random.permutation(key, n)

            def split(x):
                x = x.reshape(n, *x.shape[2:])[perm]
                return x.reshape(num_mb, 1, n // num_mb, *x.shape[1:])

            zero = PPOCarry(
                jnp.zeros((num_mb, n // num_mb, A, 1)), jnp.zeros((num_mb, n // num_mb, A, 1))
            )
            return jax.tree.map(split, batch), zero

        def epoch(carry, key):
            params, opt_state = carry
            mbs, mb_carries = minibatches(key)

            def mb_step(carry, inputs):
                params, opt_state = carry
                mb, mb_carry = inputs
                (_, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(
                    params, mb, mb_carry
                )
                grads = common.data_mean(grads, data_axis)
                updates, opt_state = tx.update(grads, opt_state, params)
                params = optax.apply_updates(params, updates)
                metrics["grad_norm"] = optax.global_norm(grads)
                return (params, opt_state), metrics

            (params, opt_state), metrics = jax.lax.scan(
                mb_step, (params, opt_state), (mbs, mb_carries)
            )
            return (params, opt_state), metrics

        params = (state.actor_params, state.critic_params)
        (params, opt_state), metrics = jax.lax.scan(
            epoch, (params, state.opt_state), jax.random.split(key, config.num_epochs)
        )
        metrics = jax.tree.map(jnp.mean, metrics)
        metrics["value_mean"] = jnp.mean(returns)
        if use_graph:
            metrics["graph_density"] = jnp.mean(bn.edge_density(info["parents"]))
            metrics["graph_threshold"] = threshold
        new_state = PPOState(
            actor_params=params[0],
            critic_params=params[1],
            opt_state=opt_state,
            value_norm=value_norm,
            num_updates=state.num_updates + 1,
        )
        return new_state, metrics

    def check_batch(num_envs: int, rollout_len: int) -> None:
        n = num_envs if config.recurrent else num_envs * rollout_len
        if n % config.num_minibatches:
            what = "num_envs" if config.recurrent else "num_envs * rollout_len"
            raise ValueError(
                f"{what} = {n} is not divisible by num_minibatches = {config.num_minibatches}"
            )

    return Agent(
        init=init,
        initial_carry=initial_carry,
        act=act,
        update=update,
        default_hparams=PPOHParams,
        get_params=lambda s: (s.actor_params, s.critic_params),
        check_batch=check_batch,
        data_parallel=lambda axis, num_shards: make_ppo(config, env, env_params, data_axis=axis),
    )


def ippo(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """IPPO: PPO with a critic on each agent's local observation."""
    return make_ppo(PPOConfig(critic_input="local", **config), env, env_params)


def mappo(env: Environment, env_params: EnvParams | None = None, **config: Any) -> Agent:
    """MAPPO: PPO with a centralised critic on the global state."""
    return make_ppo(PPOConfig(critic_input="global", **config), env, env_params)


__all__ = ["PPOCarry", "PPOConfig", "PPOHParams", "PPOState", "ippo", "make_ppo", "mappo"]
