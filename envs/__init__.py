"""Built-in environment families, installed as `marljax.envs`. Importing registers them."""

from marljax.envs import grid, matrix, particle, social, swarm  # noqa: F401
