"""The `saltpan` command line (entry point: ``runtime.cli.main:main``)."""
