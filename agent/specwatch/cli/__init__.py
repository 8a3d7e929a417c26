"""The command line: its grammar (grammar, flags, bench), and main, which parses it, builds the
settings once and runs the command from its table."""
