"""marljax.nn: the building blocks every algorithm shares, below the agents.

- `losses`: policy-gradient, value and TD losses as pure functions (GAE, V-trace, clipped PPO).
- `networks`: MLP / GRU torsos, categorical and Gaussian heads, parameter modes.
- `distributions`: masked categorical and tanh-Gaussian distributions.
- `mixers`: VDN and QMIX mixing of per-agent utilities.
- `replay`: the fixed-capacity replay buffer held in arrays.

Nothing here knows an env id, a run directory or a device.
"""

from marljax.nn import distributions, losses, mixers, networks, replay

__all__ = ["distributions", "losses", "mixers", "networks", "replay"]
