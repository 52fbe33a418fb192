"""The commands: the CLI entry and one module per headless subcommand."""
