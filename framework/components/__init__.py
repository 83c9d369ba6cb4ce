"""The runtime components of the manifest language, each with its builder beside it.

A manifest's typed models (:mod:`framework.models`) become these objects through
the registry keyed by ``type`` (:mod:`framework.components.context`):

* :mod:`.http` - requests as values, the transport seam, authentication, error
  handling and retries, and the HttpRequester;
* :mod:`.pagination` - next-page strategies and the paginator;
* :mod:`.partitions` - partition routers (list, substream);
* :mod:`.incremental` - the datetime cursor and its windows;
* :mod:`.records` - extraction, selection, transformations and schemas;
* :mod:`.retriever` (the page loop of one slice), :mod:`.stream` (a stream: schema,
  key, cursor, router), :mod:`.slices` and :mod:`.templates` (values rendered per request).
"""
