"""saltpan runtime: config, CLI, daemons, transport, state execution (all the I/O)."""
