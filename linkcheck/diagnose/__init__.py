"""Diagnosis: playbooks (YAML rules) and named checks turn facts into findings and a verdict."""
