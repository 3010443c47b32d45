"""The evidence format: a saved bundle, its digests, verification, anonymisation and save folder."""
