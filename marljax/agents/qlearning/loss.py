"""The losses of value-based MARL (IQL, VDN, QMIX): `marljax.nn.qvalues`, shared by every Q-learner.

`mixed_td_loss` with `mix_tm1 = mix_t = None` is IQL's loss, with `vdn_mix` VDN's and with a
`QMixer` QMIX's (see `marljax.nn.qvalues` for an example in a paper's own code). These names
stay importable from here.
"""

from marljax.nn.qvalues import (  # noqa: F401  (the value learners' loss and its parts)
    TARGETS,
    TEAM_REWARDS,
    double_q_values,
    masked_argmax,
    mixed_td_loss,
    td_targets,
    team_reward,
)

__all__ = ["double_q_values", "masked_argmax", "mixed_td_loss", "td_targets", "team_reward"]
