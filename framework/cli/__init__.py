"""Command-line entry points: ``validate-manifest`` and ``run-manifest``."""
