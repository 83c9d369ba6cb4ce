"""Runtime authenticators: what puts credentials on a request, one module per family.

Every authenticator follows the :class:`~framework.components.http.client.Authenticator` protocol:

* ``apply(parts)`` adds its header, query parameter or body field to a
  :class:`~framework.components.http.request.RequestParts` being assembled;
* ``refresh()`` is called once after a 401 and says whether the request is
  worth retrying (only authenticators that obtain credentials at run time
  can get new ones: OAuth and session tokens);
* ``secrets()`` lists the credential values in use right now (tokens obtained
  at run time, passwords), so that logs and messages can mask them.

Templates are rendered once, when the authenticator is built: the config does
not change during a sync, so a request costs no template work. No ``repr``
shows a credential.

The modules (each registers the builders of its types, and the registry imports
one only when a manifest uses one of them, so this package re-exports nothing):

* :mod:`~framework.components.http.auth.base` - what the families share: the
  protocol, :class:`~framework.components.http.auth.base.NoAuth` and the helpers
  that render values and list secrets.
* :mod:`~framework.components.http.auth.static` - credentials sent as given: an
  API key, a bearer token, HTTP basic auth.
* :mod:`~framework.components.http.auth.tokens` - the renewal of tokens obtained
  or signed at run time, shared by threads and by the sync's token service, and
  the retried token request.
* :mod:`~framework.components.http.auth.oauth` - OAuth 2.0 access tokens, with
  rotating refresh tokens.
* :mod:`~framework.components.http.auth.jwt` - JSON Web Tokens signed with PyJWT.
* :mod:`~framework.components.http.auth.session_token` - session tokens got by
  logging in (the current authenticator and Airbyte's older one).
* :mod:`~framework.components.http.auth.selective` - one authenticator chosen by
  a config value.
"""
