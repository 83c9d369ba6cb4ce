"""The sync engine: a connector opened for a config, its units planned, read and turned into state.

Every front end (protocol mode, the Spark pipeline, the DataFrame reader)
calls this package; none drives units its own way.

* :mod:`.connector` - load and check a manifest and a config, build the streams;
* :mod:`.sync` - one stream's sync: the units (each with the saved cursor value it
  starts from), reading one unit (:func:`~.sync.read_unit`), the state finished units allow;
* :mod:`.plan` - a stream's :class:`~.plan.Sync` for a connector (a :class:`~.sync.StreamSync`),
  and its units in contiguous groups (one per Spark task or DataFrame input partition);
* :mod:`.bridge` - the sync of a stream airbyte-cdk reads (a custom retriever or requester:
  :class:`~.bridge.BridgeSync`, the same seams) and reading one of its units in a worker;
* :mod:`.scheduler` - reading units in threads (:func:`~.scheduler.concurrent_pages`), their pages
  as :class:`~.scheduler.Page` and :class:`~.scheduler.UnitEnd` events in arrival order (protocol
  mode, a Spark task's group);
* :mod:`.worker` - what a worker process needs: the connector as text
  (:class:`~.worker.ConnectorSource`, :func:`~.worker.all_schemas`), built once per
  process, and a group of units read into typed Arrow batches, several at once
  (:func:`~.worker.read_group`);
* :mod:`.results` - :class:`~.results.UnitResult`, what a unit read elsewhere came
  to, in its Arrow form, and folding results into the stream's sync;
* :mod:`.window_progress` and :mod:`.partition_states` - the state rules of windows and partitions.

:mod:`.worker` and :mod:`.results` use pyarrow; nothing here imports pyspark.
"""
