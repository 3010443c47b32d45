"""Repairs: the plan as data (findings and facts in, ordered steps per node out) and its record in a bundle."""
