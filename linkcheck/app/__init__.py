"""What each command does, as library calls: the CLI parses options, calls one of these, renders."""
