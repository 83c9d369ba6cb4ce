"""Change data from API records: the realtime mode of the Replicant formats.

With ``format_type: replicant_csv`` (or ``replicant_json``) and ``mode:
realtime``, a sync does not write records but operations: ``I`` for a key not
seen before, ``U`` for a key whose values changed, ``D`` for a record marked
deleted or, in a full-refresh stream, a key gone from the new snapshot.

* :mod:`.plan`: :func:`realtime_stream`, the stream's :class:`ChangeStream`
  (fields, key, cursor, where everything goes); a stream without a primary
  key is refused with a :class:`~framework.errors.ConfigError`.
* :mod:`.staging`: the sync's tasks write their typed records under the
  stream's staging folder instead of the output (committed per group, so the
  state advances as for any format), and the apply reads them back.
* :mod:`.apply`: :func:`apply_changes` runs once the sync's groups are back:
  the records are joined with the previous image of the keys they touch on
  the executors, the operations and the touched buckets of the new image are
  written, and a pointer file commits both.
* :mod:`.ops`: deriving one change and rendering it as CSV or JSON (pure).
* :mod:`.render`: the same, a whole Arrow batch at a time (what the apply uses).
* :mod:`.buckets`: the image split into hash buckets of the key, so that an
  apply reads and writes only the buckets its records fall in.
* :mod:`.pointer`: the commit document.

The package itself imports nothing: a task that stages records
(``framework.cdc.staging``) needs none of the apply's modules, and the driver
of a sync without change data none at all. Import the submodule you need,
``from framework.cdc.apply import apply_changes``.
"""
