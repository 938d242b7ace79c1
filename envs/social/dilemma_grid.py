"""Cleanup and Harvest sequential social dilemmas (work in progress)."""
