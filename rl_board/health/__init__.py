"""Health checks: the rule machinery (engine) and two rule sets (metrics, rollouts)."""
