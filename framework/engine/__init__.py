"""The sync engine: a connector opened for a config, its units planned, read and turned into state.

Every front end (protocol mode, the Spark pipeline, the DataFrame reader)
calls this package; none drives units its own way.

* :mod:`.connector` - load and check a manifest and a config, build the streams;
* :mod:`.sync` - one stream's sync: the plan of units, reading one unit, the state finished units allow;
* :mod:`.window_progress` and :mod:`.partition_states` - the state rules of windows and partitions;
* :mod:`.scheduler` - reading units in threads, in the caller's order.
"""
