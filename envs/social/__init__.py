"""Social dilemmas (work in progress; see the social-dilemmas issue)."""
