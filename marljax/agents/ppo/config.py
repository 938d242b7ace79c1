"""Static structure (`PPOConfig`), traced hyperparameters (`PPOHParams`) and state of PPO agents."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import jax
from flax import struct

from marljax.agents import common
from marljax.agents.bn import graphs as bn
from marljax.core.config import check_ranges, param
from marljax.nn import losses

Array = jax.Array

ParameterMode = Literal["shared", "shared_id", "independent"]
CriticInput = Literal["local", "global"]
Torso = Literal["auto", "mlp", "cnn"]
GRAPHS = ("none", "empty", "chain", "line", "full", "learned")
TORSOS = ("auto", "mlp", "cnn")


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """Static structure of a PPO-family agent (shapes and loop lengths; not traced).

    Attributes:
      critic_input: "local" (IPPO) or "global" (MAPPO).
      parameter_mode: "shared", "shared_id" (shared + one-hot agent id) or "independent".
      hidden_sizes: widths of the actor and critic MLP torsos.
      activation: torso activation (tanh, relu, elu, gelu, silu).
      torso: the default networks' input layers. "auto": a small CNN
        (`marljax.nn.networks.GridEncoder`) before the MLP when the network's input space declares
        a grid layout (`Box(..., layout="hwc" | "chw")`), the flat MLP otherwise; "mlp": always
        flatten into the MLP; "cnn": require a grid input. Ignored for user-given networks.
      cnn_channels: output channels of the CNN's convolutions (3x3, "SAME" padding).
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
      graph_edge_init: initial probability of every allowed edge of the "learned" graph (the
        graph network's edge logits start at `logit(graph_edge_init)`).
      graph_order_bias: initial gap between consecutive agents' order scores of the "learned"
        graph (agent `i`'s score starts at `-graph_order_bias * i`; 0: all orders equally
        likely). The defaults (0.99, 5.0) start the learned graph at (nearly) the full graph in
        index order, the dense start of Chen et al. 2023, and let training move it. A
        near-uniform start (0.5, 0.0) splits each agent's plays between the root and the child
        role and leaves the edge that lets a child answer its parent absent in most plays: on
        the penalty game (k = 25) the roots settle on the safe action within about 10 updates,
        before the graph learns (a frozen graph does as well as a learned one): 1/16 seeds
        reached the optimum, 12/16 with these defaults, 13/16 with the fixed chain or full
        graph (`baselines/bn_mappo_coordination.py`, baselines/README.md).
    """

    critic_input: CriticInput = param("global", help='"local" (IPPO) or "global" (MAPPO).')
    parameter_mode: ParameterMode = param(
        "shared_id", help='"shared", "shared_id" (shared + one-hot agent id) or "independent".'
    )
    hidden_sizes: tuple[int, ...] = param(
        (64, 64), help="widths of the actor and critic MLP torsos."
    )
    activation: str = param("tanh", help="torso activation (tanh, relu, elu, gelu, silu).")
    torso: Torso = param(
        "auto", help='input layers: "auto" (CNN on grid inputs, else MLP), "mlp" or "cnn".'
    )
    cnn_channels: tuple[int, ...] = param(
        (16, 16), help='output channels of the CNN\'s 3x3 "SAME" convolutions.'
    )
    recurrent: bool = param(False, help="use a GRU core before the MLP torso.")
    gru_size: int = param(64, lo=1, help="width of the GRU.")
    num_epochs: int = param(4, lo=1, help="passes over each rollout.")
    num_minibatches: int = param(
        4, lo=1, help="minibatches per epoch (over environments when recurrent, else samples)."
    )
    normalize_advantages: bool = param(True, help="standardise advantages per minibatch.")
    value_norm: bool = param(
        False, help="learn values in a running standardised scale (MAPPO's ValueNorm)."
    )
    clip_value_loss: bool = param(
        True, help="use the PPO clipped value loss (clip range hparams.value_clip_eps)."
    )
    tanh_squash: bool = param(
        False, help="continuous actions through tanh, rescaled to the action box."
    )
    graph: Any = param(
        "none",
        help='joint-policy graph: "none", "empty", "chain"/"line", "full", "learned" or an '
        "[A, A] parent mask.",
    )
    graph_threshold_start: float = param(0.0, help="edge-pruning threshold at the first update.")
    graph_threshold_end: float = param(
        0.0, help="edge-pruning threshold after graph_anneal_updates updates."
    )
    graph_anneal_updates: int = param(
        0, help="updates over which the threshold rises linearly (0: constant at start)."
    )
    graph_edge_init: float = param(
        0.99,
        lo=0.0,
        lo_open=True,
        hi=1.0,
        help='initial probability of each allowed edge of the "learned" graph.',
    )
    graph_order_bias: float = param(
        5.0,
        lo=0.0,
        help='initial order-score gap between consecutive agents of the "learned" graph.',
    )

    def __post_init__(self):
        common.check_choice("critic_input", self.critic_input, ("local", "global"))
        common.check_parameter_mode(self.parameter_mode)
        common.check_choice("torso", self.torso, TORSOS)
        check_ranges(self, "PPOConfig")
        if not self.hidden_sizes or any(int(h) < 1 for h in self.hidden_sizes):
            raise ValueError(
                f"PPOConfig.hidden_sizes must be positive widths, got {self.hidden_sizes}"
            )
        if not self.cnn_channels or any(int(c) < 1 for c in self.cnn_channels):
            raise ValueError(
                f"PPOConfig.cnn_channels must be positive widths, got {self.cnn_channels}"
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
        if self.graph_edge_init >= 1.0:
            raise ValueError(
                f"PPOConfig.graph_edge_init must be in (0, 1) (an edge probability; 1 would be "
                f"an infinite logit), got {self.graph_edge_init!r}"
            )
        if self.uses_graph and self.recurrent:
            raise ValueError("PPOConfig.graph (BN joint policy) needs recurrent=False")

    @property
    def uses_graph(self) -> bool:
        """A Bayesian-network joint policy (BN-MAPPO) rather than independent actors."""
        return not (isinstance(self.graph, str) and self.graph == "none")


#: `PPOConfig` overrides that make PPO the synchronous advantage actor-critic (A2C, Mnih et al.
#: 2016): one pass, one minibatch, raw advantages, unclipped value loss. At the only step the
#: ratio is 1, so the clip is inactive and the update is A2C's exactly (Huang et al. 2022, "A2C
#: is a special case of PPO", https://arxiv.org/abs/2205.09123).
A2C_OVERRIDES: dict[str, Any] = {
    "num_epochs": 1,
    "num_minibatches": 1,
    "normalize_advantages": False,
    "clip_value_loss": False,
}


@struct.dataclass
class PPOHParams:
    """Traced hyperparameters of PPO (each may be vmapped over in a sweep).

    Defaults follow the MAPPO paper's (Yu et al. 2022) recommendations where they apply.

    Attributes:
      lr: Adam learning rate of actor and critic.
      gamma: discount.
      gae_lambda: lambda of generalised advantage estimation.
      clip_eps: clip range of the policy ratio.
      value_clip_eps: clip range of the clipped value loss.
      ent_coef: weight of the entropy bonus.
      vf_coef: weight of the value loss.
      max_grad_norm: global gradient-norm clip.
      adam_eps: Adam's epsilon.
    """

    lr: Any = param(5e-4, lo=0.0, lo_open=True, help="Adam learning rate of actor and critic.")
    gamma: Any = param(0.99, lo=0.0, hi=1.0, help="discount.")
    gae_lambda: Any = param(
        0.95, lo=0.0, hi=1.0, help="lambda of generalised advantage estimation."
    )
    clip_eps: Any = param(0.2, lo=0.0, help="clip range of the policy ratio.")
    value_clip_eps: Any = param(0.2, lo=0.0, help="clip range of the clipped value loss.")
    ent_coef: Any = param(0.01, lo=0.0, help="weight of the entropy bonus.")
    vf_coef: Any = param(0.5, lo=0.0, help="weight of the value loss.")
    max_grad_norm: Any = param(0.5, lo=0.0, lo_open=True, help="global gradient-norm clip.")
    adam_eps: Any = param(1e-5, lo=0.0, lo_open=True, help="Adam's epsilon.")


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
    """Recurrent state while acting: `[E, A, H]` each (`H = 1` zeros when feed-forward)."""

    actor: Array
    critic: Array


__all__ = [
    "A2C_OVERRIDES",
    "GRAPHS",
    "TORSOS",
    "CriticInput",
    "ParameterMode",
    "PPOCarry",
    "PPOConfig",
    "PPOHParams",
    "PPOState",
    "Torso",
]
