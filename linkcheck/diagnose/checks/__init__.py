"""The named checks: Python judgements that playbooks reference by name (registry.CHECKS)."""
