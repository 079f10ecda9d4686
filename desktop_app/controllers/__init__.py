"""Controllers: each runs its own engine jobs through the bridge and emits typed signals that
the views render."""
