"""Reporters: the console view (rich) and the versioned JSON document."""
