"""The connector builder: a local web app to edit a manifest, test-read its streams, infer and accept schemas,
and save it (``manifest-builder``).

:mod:`.session` is what one builder session keeps and does (the JSON API's operations, no HTTP);
:mod:`.secrets` hides the config's secrets from the page and puts them back; :mod:`.runs` is a test read
running in the background; :mod:`.server` serves the page and the API with the standard library's
``http.server`` on the loopback address. The page's assets live in ``static/``.
"""
