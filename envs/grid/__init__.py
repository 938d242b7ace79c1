"""Gridworlds (work in progress; see the gridworlds issue)."""
