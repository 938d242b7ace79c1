"""The 43 bots of the International RoShamBo Programming Competition, as pure JAX strategies."""
