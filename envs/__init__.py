"""Built-in environment families, installed as `marljax.envs`. Importing registers them."""

from marljax.envs import matrix  # noqa: F401
