"""IPPO training on grid observations: marljax's matmul CNN beside flax's convolution and an MLP.

The default PPO torso for grid observations is `marljax.nn.networks.GridEncoder`, whose
convolutions are `marljax.nn.networks.Conv`: one matmul over the shifted windows of the input.
The reference is the same encoder with `flax.linen.Conv` (XLA's convolution, what GridEncoder
used before), with the same parameters and initialisation; the third row flattens the grid into
the MLP (`torso="mlp"`). The task is IPPO (shared parameters with agent ids, local critics) on
Harvest's small map (`social/harvest_small-v0`: 3 agents, 7 x 7 x 7 egocentric windows), 8 envs
x 32-step rollouts, 4 epochs x 4 minibatches per update; `--seeds N` vmaps N seeds in one
program, which is where XLA's CPU convolution is slow (a kernel per seed makes it a grouped
convolution).

    python bench/bench_cnn.py [--steps 8192] [--seeds 4] [--json PATH]
"""

from __future__ import annotations

import flax.linen as nn
import jax.numpy as jnp
from harness import Options, Result, TrainSteps, case, main_with_steps, marljax_training

import marljax
from marljax.agents.ppo import PPOConfig, PPOHParams, make_ppo
from marljax.agents.ppo import networks as ppo_networks
from marljax.nn.networks import GridEncoder, orthogonal
from marljax.training.train import TrainConfig, make_train

STEPS = TrainSteps(8192)  # --quick keeps the default
NUM_ENVS, ROLLOUT = 8, 32


class FlaxConvEncoder(GridEncoder):
    """`GridEncoder` with `flax.linen.Conv` (the reference: XLA's convolution)."""

    @nn.compact
    def __call__(self, x):
        H, W, C = self.grid_shape
        batch = x.shape[:-1]
        grid, rest = x[..., : H * W * C].reshape(-1, H, W, C), x[..., H * W * C :]
        for i, width in enumerate(self.channels):
            conv = nn.Conv(
                width,
                (self.kernel_size, self.kernel_size),
                padding="SAME",
                kernel_init=orthogonal(jnp.sqrt(2.0)),
                name=f"Conv_{i}",
            )
            grid = nn.relu(conv(grid))
        return jnp.concatenate([grid.reshape(*batch, -1), rest], axis=-1)


def _run(opts: Options, torso: str, framework: str, encoder: type | None = None) -> list[Result]:
    env, params = marljax.make("social/harvest_small-v0")
    config = PPOConfig(critic_input="local", parameter_mode="shared_id", torso=torso)
    networks = None
    if encoder is not None:
        space = env.observation_space(params)
        enc = encoder(space.grid_shape, space.layout, tuple(config.cnn_channels))
        default = ppo_networks.default_networks(config, space, space, env.num_actions)
        networks = default._replace(actor_encoder=enc, critic_encoder=enc)
    agent = make_ppo(config, env, params, networks)
    steps = STEPS(opts)
    run = TrainConfig(num_envs=NUM_ENVS, rollout_len=ROLLOUT, total_env_steps=steps)
    task = f"IPPO social/harvest_small-v0, {steps} steps"
    trainer = make_train(run, env, agent, params)
    return marljax_training(trainer, PPOHParams(), task, framework=framework)


@case("cnn/marljax")
def matmul_cnn(opts: Options) -> list[Result]:
    return _run(opts, "cnn", "marljax")


@case("cnn/flax_conv")
def flax_conv_cnn(opts: Options) -> list[Result]:
    return _run(opts, "cnn", "flax Conv", FlaxConvEncoder)


@case("cnn/mlp")
def mlp(opts: Options) -> list[Result]:
    return _run(opts, "mlp", "MLP (flattened)")


if __name__ == "__main__":
    names = ["cnn/flax_conv", "cnn/marljax", "cnn/mlp"]
    main_with_steps(names, __doc__.splitlines()[0], STEPS)
