"""Acceptance of a pair against a profile: what to run (repetitions, test parameters) and the thresholds."""
