"""A requester's ``url_base`` must be an HTTP address: ``file:///``, ``ftp://`` or a host without a scheme
would fail only at run time (the transport refuses it), so validate-manifest says so at its place; and its
``credential_redirect_hosts`` are host names (a URL there would never match a redirect's host).

Only what the manifest itself fixes is checked: the text before the first template (``{{ config.url }}``
is the config's business, checked when a sync starts)."""

from __future__ import annotations

from collections.abc import Iterator

from framework.diagnostics import Diagnostic
from framework.manifest.components import Placement, Site
from framework.models import HttpRequester

__all__ = ["url_base_checks", "url_problem"]

SCHEMES = ("http", "https")


def url_problem(url_base: str) -> str | None:
    """What is wrong with ``url_base`` as far as its fixed text tells (None: nothing, or a template decides)."""
    cut = min((i for i in (url_base.find("{{"), url_base.find("{%")) if i >= 0), default=len(url_base))
    fixed = url_base[:cut].strip().lstrip("\"'")  # a quoted template renders unquoted (Airbyte's literal eval)
    if not fixed:
        return None  # all of it comes from a template (or `path` holds the whole URL)
    if "://" in fixed:
        scheme = fixed.split("://", 1)[0].lower()
        if scheme not in SCHEMES:
            return f"`url_base` is a `{scheme}://` address; requests go over HTTP only"
        return None
    if cut == len(url_base):
        return f"`url_base` {url_base!r} has no scheme"
    return None


def url_base_checks(sites: list[Site], place: Placement) -> Iterator[Diagnostic]:
    for site in sites:
        if site.model is not HttpRequester:
            continue
        hosts = site.data.get("credential_redirect_hosts")
        for index, host in enumerate(hosts if isinstance(hosts, list) else []):
            if isinstance(host, str) and (host == "" or any(char in host for char in "/:?#@ ")):
                yield place.diagnostic(site.path + ("credential_redirect_hosts", index), "bad-redirect-host",
                                       f"`credential_redirect_hosts` names {host!r}, which is not a host name",
                                       "give the host alone, as in `cdn.example.com` (no scheme, port or path)")
        url_base = site.data.get("url_base")
        if not isinstance(url_base, str):
            continue
        problem = url_problem(url_base)
        if problem is not None:
            yield place.diagnostic(site.path + ("url_base",), "bad-url-base", problem,
                                   "write the API's address with http:// or https://")
