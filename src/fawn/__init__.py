"""fawn: a self-hosted agent runtime."""
