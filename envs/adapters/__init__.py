"""Adapters at the edge: import JaxMARL envs into the marljax contract, export marljax envs to
PettingZoo. Optional dependencies are imported lazily inside each adapter."""
