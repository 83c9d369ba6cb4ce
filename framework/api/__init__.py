"""The Python API: :func:`framework.sync` and :func:`framework.read` (docs/python-api.md).

``framework.api.sync`` runs the sync ``run-manifest`` runs (one function,
:func:`framework.cli.sync_command.sync_selections`) and answers a typed
report (``framework.api.report``); ``framework.api.read`` reads streams into
DataFrames. Nothing is imported here: ``import framework`` stays cheap.
"""
