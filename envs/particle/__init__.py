"""Multi-Agent Particle Environment worlds (simple spread, simple tag). Importing registers them."""
