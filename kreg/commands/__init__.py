"""The `kreg` subcommands that sit on top of every layer (verify, profile)."""
