"""Checks of an AsyncRetriever that its schema cannot say: which job response each request may read.

The job's requests run in order: the creation request (nothing of the job yet), then the polling,
abort and delete requests (``creation_response``), the download-target request (``polling_response``),
and the downloads (all three, ``download_target`` too). A template that reads a response its request
runs before renders empty; the requests of a job are never asked to shrink pages or split windows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from framework.diagnostics import Diagnostic
from framework.interpolation.analysis import analyze_template
from framework.manifest.components import Placement, Site
from framework.models import AsyncRetriever

# what each of the job's requests may read (beyond the usual request variables)
_READS = {
    "creation_requester": frozenset(),
    "polling_requester": frozenset({"creation_response"}),
    "abort_requester": frozenset({"creation_response"}),
    "delete_requester": frozenset({"creation_response"}),
    "download_target_requester": frozenset({"polling_response"}),
    "download_requester": frozenset({"creation_response", "polling_response", "download_target"}),
}
_JOB = frozenset({"creation_response", "polling_response", "download_target"})
_ACTIONS = ("REDUCE_PAGE_SIZE", "SPLIT_REQUEST_WINDOW")


def async_checks(sites: list[Site], place: Placement) -> Iterator[Diagnostic]:
    for site in sites:
        if site.model is AsyncRetriever:
            yield from _retriever(site, place)


def _retriever(site: Site, place: Placement) -> Iterator[Diagnostic]:
    for name, allowed in _READS.items():
        requester = site.data.get(name)
        if not isinstance(requester, dict):
            continue
        for path, text in _strings(requester, site.path + (name,)):
            info = analyze_template(text)
            if not info.is_template:
                continue
            readable = ", ".join(f"`{v}`" for v in sorted(allowed)) or "the config and the partition"
            for variable in sorted((info.variables & _JOB) - allowed):
                when = "before the job exists" if name == "creation_requester" else "before that response exists"
                yield place.diagnostic(path, "async-variable-too-early",
                                       f"`{name}` reads `{variable}`, but that request runs {when}: it renders "
                                       "empty", f"read only {readable} here")
        for path, action in _actions(requester.get("error_handler"), site.path + (name, "error_handler")):
            yield place.diagnostic(path, "async-action", f"the `{name}` of an AsyncRetriever cannot {action} "
                                   "(a job's requests have no pages to shrink or windows to split), as in Airbyte",
                                   "use RETRY, FAIL or IGNORE here")


def _strings(value: Any, path: tuple) -> Iterator[tuple[tuple, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in ("authenticator", "error_handler"):  # those render with their own variables
                yield from _strings(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, path + (index,))


def _actions(value: Any, path: tuple) -> Iterator[tuple[tuple, str]]:
    if isinstance(value, dict):
        action = value.get("action")
        if action in _ACTIONS:
            yield path + ("action",), action
        for key, item in value.items():
            if isinstance(item, (dict, list)):
                yield from _actions(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _actions(item, path + (index,))


__all__ = ["async_checks"]
