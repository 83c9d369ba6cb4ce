"""Talking HTTP: requests as values, the transport seam, authentication, retries.

* :mod:`framework.components.http.request` - :class:`HttpRequest` (a request as a frozen
  value), :class:`RequestParts` (a request being assembled) and
  :class:`Injection` (where a RequestOption puts a value).
* :mod:`framework.components.http.transport` - :class:`Transport`, the one place bytes
  leave the process; tests swap it for a fake.
* :mod:`framework.components.http.auth` - authenticators, one module per family.
* :mod:`framework.components.http.error_handler` - what a response means (retry, ignore,
  fail) and how long to wait.
* :mod:`framework.components.http.client` - sending with authentication, retries and backoff.
"""
