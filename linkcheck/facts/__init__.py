"""Facts: the twin-aware model of each node and of the pair, built from parsed records."""
