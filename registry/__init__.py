"""The registry: op and variant schema, loading, hashing, the results store and the `kreg` CLI."""
