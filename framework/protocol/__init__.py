"""Airbyte protocol mode: messages, configured catalogs, state, and the read loop.

``run-manifest --protocol`` prints one JSON message per line, as Airbyte's
sources do, so the framework can stand in for ``source-declarative-manifest``.
"""
