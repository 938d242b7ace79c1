"""Lifelong multi-agent pathfinding (work in progress)."""
