"""Beyond the pair: where the nodes are (host sources), how they are cabled (topology), and which tests can run at
once (round schedules)."""
