"""Advice on how to use the pair (two residents, one model across both, one node), from a bundle."""
