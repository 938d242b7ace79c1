"""Published configurations of the PPO-family algorithms (ippo, mappo, ia2c, maa2c) as `Preset`s.

`PRESETS[algo][name]`. The presets set only fields of `PPOConfig` / `PPOHParams` (and the
training loop's sizes in `Preset.train`), never what defines the algorithm (`critic_input`, and
for ia2c / maa2c `A2C_OVERRIDES`). Each source says what marljax does not reproduce; what all
of them share:

- no learning-rate schedule: `PPOHParams.lr` is constant, where JaxMARL anneals it linearly to
  0 (`ANNEAL_LR: True`);
- one Adam over actor and critic (the value loss weighted by `vf_coef`, one global-norm clip),
  where JaxMARL's MAPPO, EPyMARL and the MAPPO paper's code keep two optimisers;
- the recurrent networks are a GRU on the input followed by the `hidden_sizes` MLP, where the
  sources put dense layers before the GRU;
- the critic reads the environment's `global_state` (MAPPO) or the agent's observation
  (IPPO), whatever the source built as its centralised input.
"""

from __future__ import annotations

from marljax.agents.presets import Preset

# --------------------------------------------------------------------------------- JaxMARL

_JAXMARL_IPPO = Preset(
    "jaxmarl",
    config=dict(
        parameter_mode="shared",
        hidden_sizes=(64, 64),
        activation="tanh",
        recurrent=False,
        num_epochs=4,
        num_minibatches=4,
        normalize_advantages=True,
        value_norm=False,
        clip_value_loss=True,
    ),
    hparams=dict(
        lr=2.5e-4,
        gamma=0.99,
        gae_lambda=0.95,
        clip_eps=0.2,
        value_clip_eps=0.2,
        ent_coef=0.01,
        vf_coef=0.5,
        max_grad_norm=0.5,
        adam_eps=1e-5,
    ),
    train=dict(num_envs=16, rollout_len=128, total_env_steps=10_000_000),
    source=(
        "JaxMARL (Rutherford et al. 2024) baselines/IPPO/config/ippo_ff_mpe.yaml with the "
        "network of baselines/IPPO/ippo_ff_mpe.py: one shared feed-forward actor-critic "
        "(2 x 64 tanh, no agent id), Adam 2.5e-4 (eps 1e-5), 4 epochs x 4 minibatches, clip "
        "0.2 (value clipped with the same range), entropy 0.01, grad clip 0.5, 16 envs x 128 "
        "steps, 1e7 steps. Not reproduced: the linear learning-rate anneal to 0; JaxMARL pads "
        "observations of different sizes to the largest."
    ),
)

_JAXMARL_MAPPO = Preset(
    "jaxmarl",
    config=dict(
        parameter_mode="shared",
        hidden_sizes=(128,),
        activation="relu",
        recurrent=True,
        gru_size=128,
        num_epochs=4,
        num_minibatches=4,
        normalize_advantages=True,
        value_norm=False,
        clip_value_loss=True,
    ),
    hparams=dict(
        lr=2e-3,
        gamma=0.99,
        gae_lambda=0.95,
        clip_eps=0.2,
        value_clip_eps=0.2,
        ent_coef=0.01,
        vf_coef=0.5,
        max_grad_norm=0.5,
        adam_eps=1e-5,
    ),
    train=dict(num_envs=16, rollout_len=128, total_env_steps=10_000_000),
    source=(
        "JaxMARL (Rutherford et al. 2024) baselines/MAPPO/config/mappo_homogenous_rnn_mpe.yaml "
        "with the networks of baselines/MAPPO/mappo_rnn_mpe.py: shared (homogeneous, no agent "
        "id) recurrent actor and critic, GRU 128 and a 128 ReLU layer, Adam 2e-3 (eps 1e-5), 4 "
        "epochs x 4 minibatches, clip 0.2 (SCALE_CLIP_EPS off; value clipped with the same "
        "range), entropy 0.01, grad clip 0.5, 16 envs x 128 steps, 1e7 steps. Not reproduced: "
        "the linear learning-rate anneal to 0; the 128-unit ReLU embedding before the GRU; the "
        "separate actor and critic optimisers; its world state (all agents' observations "
        "concatenated; marljax uses the env's global_state); minibatches over (env, agent) "
        "sequences (marljax: over envs)."
    ),
)

# --------------------------------------------------------------------------------- EPyMARL

#: what EPyMARL's four actor-critic configs share (src/config/default.yaml + algs/*.yaml)
_EPYMARL_NET = dict(
    parameter_mode="shared_id",  # shared parameters, obs_agent_id: True
    hidden_sizes=(128,),  # hidden_dim: 128
    activation="relu",
    recurrent=True,  # use_rnn: True
    gru_size=128,
    value_norm=False,  # standardise_returns: False
)
_EPYMARL_PPO = dict(
    num_epochs=4, num_minibatches=1, normalize_advantages=False, clip_value_loss=False
)
_EPYMARL_HP = dict(gamma=0.99, max_grad_norm=10.0, adam_eps=1e-8)
#: batch_size_run: 10 parallel envs; t_max: 20,050,000 env steps (all envs together)
_EPYMARL_TRAIN = dict(num_envs=10, total_env_steps=20_050_000)
_EPYMARL_GAPS = (
    " Not reproduced: the 5-step bootstrapped returns (q_nstep: 5; marljax uses GAE with "
    "gae_lambda 0.95), reward standardisation (standardise_rewards: True), the Polyak target "
    "critic (target_update_interval_or_tau: 0.01), the feed-forward critic (marljax's critic is "
    "recurrent too), separate actor and critic Adams; EPyMARL trains on 10 whole episodes per "
    "update (set rollout_len to the episode length). These are the repository's config files, "
    "not the per-task tuned values of the paper's appendix."
)


def _epymarl(algo: str, lr: float, ent_coef: float, ppo: bool) -> Preset:
    learner = "ppo_learner: 4 epochs over one batch, clip 0.2" if ppo else "actor_critic_learner"
    return Preset(
        "epymarl",
        config={**_EPYMARL_NET, **(_EPYMARL_PPO if ppo else {})},
        hparams=dict(lr=lr, ent_coef=ent_coef, **_EPYMARL_HP, **({"clip_eps": 0.2} if ppo else {})),
        train=_EPYMARL_TRAIN,
        source=(
            f"EPyMARL (Papoudakis et al. 2021) src/config/algs/{algo}.yaml on src/config/"
            f"default.yaml (2024 release): {learner}, Adam {lr:g}, entropy {ent_coef:g}, grad "
            "clip 10, raw advantages, unclipped value loss, a shared GRU agent (128) with agent "
            "ids, 10 parallel envs, 20.05M steps." + _EPYMARL_GAPS
        ),
    )


# ---------------------------------------------------------------------------- MAPPO paper

_MAPPO_PAPER = Preset(
    "mappo_paper",
    config=dict(
        parameter_mode="shared",
        hidden_sizes=(64, 64),
        activation="relu",
        recurrent=True,
        gru_size=64,
        num_epochs=10,
        num_minibatches=1,
        normalize_advantages=True,
        value_norm=True,
        clip_value_loss=True,
    ),
    hparams=dict(
        lr=7e-4,
        gamma=0.99,
        gae_lambda=0.95,
        clip_eps=0.2,
        value_clip_eps=0.2,
        ent_coef=0.01,
        vf_coef=1.0,
        max_grad_norm=10.0,
        adam_eps=1e-5,
    ),
    train=dict(num_envs=128, rollout_len=25, total_env_steps=20_000_000),
    source=(
        "Yu et al. 2022, 'The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games', "
        "MPE hyperparameters, as released in the on-policy repository's onpolicy/config.py and "
        "onpolicy/scripts/train_mpe_scripts/train_mpe_spread.sh (simple spread): lr 7e-4 (actor "
        "and critic), 10 PPO epochs, 1 minibatch, clip 0.2 (value clipped too), GAE 0.95, gamma "
        "0.99, entropy 0.01, value loss coefficient 1, grad clip 10, Adam eps 1e-5, ValueNorm, "
        "shared recurrent policy (GRU 64, ReLU, 64-wide layers), 128 envs x 25 steps, 2e7 "
        "steps. Not reproduced: the Huber value loss (delta 10; marljax: squared error), the "
        "input LayerNorm (use_feature_normalization), recurrent training in chunks of 10 steps "
        "(marljax replays the whole 25-step rollout), the two dense layers before the GRU "
        "(marljax: after), separate actor and critic optimisers."
    ),
)

#: `{algorithm: {name: Preset}}` for ippo, mappo, ia2c and maa2c
PRESETS: dict[str, dict[str, Preset]] = {
    "ippo": {"jaxmarl": _JAXMARL_IPPO, "epymarl": _epymarl("ippo", 3e-4, 0.001, ppo=True)},
    "mappo": {
        "jaxmarl": _JAXMARL_MAPPO,
        "epymarl": _epymarl("mappo", 3e-4, 0.001, ppo=True),
        "mappo_paper": _MAPPO_PAPER,
    },
    "ia2c": {"epymarl": _epymarl("ia2c", 5e-4, 0.001, ppo=False)},
    "maa2c": {"epymarl": _epymarl("maa2c", 5e-4, 0.01, ppo=False)},
}

__all__ = ["PRESETS"]
