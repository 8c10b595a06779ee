"""Library-free baseline clients and the per-measurement worker."""
