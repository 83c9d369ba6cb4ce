"""Streams at run time: requests, the page loop, slices, and syncs with state.

* :mod:`framework.streams.requester` - an HttpRequester's requests.
* :mod:`framework.streams.retriever` - the page loop of one slice.
* :mod:`framework.streams.stream` - a stream: schema, key, cursor, partitions.
* :mod:`framework.streams.connector` - a whole manifest built for a config.
"""

from framework.streams import requester, retriever, stream  # noqa: F401  (register builders)
