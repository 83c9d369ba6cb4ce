"""A fake API that answers only the properties a request names (HubSpot's style), for query-properties tests.

Routes, registered on a :class:`~fakes.api_server.FakeApi` by :func:`serve_properties_api`:

* ``GET /properties?page=N`` - the property names, two per page:
  ``{"results": [{"name": "email", "label": "..."}, ...], "page": N, "total_pages": T}``;
* ``GET /contacts?properties=a,b&page=N&per_page=K[&updated_since=ISO]`` - the contacts updated
  since the bound, each ``{"id", "updated_at", "properties": {only the named ones}}``; a request
  naming a property the API does not have is answered 400 (so a wrong chunk is seen at once).
"""

from __future__ import annotations

from typing import Any

from fakes.api_server import ApiError, FakeApi, RecordedRequest, paged

PROPERTIES = ("email", "first_name", "last_name", "phone", "company", "city", "lifecycle_stage")


def contacts(count: int = 7) -> list[dict[str, Any]]:
    """Every contact with every property (ids are text, as HubSpot's are)."""
    return [{"id": f"c{i}", "updated_at": f"2024-01-0{1 + i // 3}T00:00:00Z",
             "properties": {name: f"{name}-{i}" for name in PROPERTIES}}
            for i in range(count)]


def serve_properties_api(api: FakeApi, items: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Register the routes on ``api``; answers the contacts served (change them to change the API)."""
    served = items if items is not None else contacts()

    def properties(request: RecordedRequest) -> dict[str, Any]:
        listed = [{"name": name, "label": name.replace("_", " ").title()} for name in PROPERTIES]
        return paged(listed, request, default_page_size=2, data_key="results")

    def contacts_route(request: RecordedRequest) -> dict[str, Any]:
        text = request.param("properties")
        if text is None:
            raise ApiError(400, "name the properties to read in ?properties=")
        wanted = [name for name in text.split(",") if name]
        unknown = [name for name in wanted if name not in PROPERTIES]
        if unknown:
            raise ApiError(400, f"unknown properties: {', '.join(unknown)}")
        since = request.param("updated_since")
        chosen = [item for item in served if since is None or item["updated_at"] >= since]
        answered = [{"id": item["id"], "updated_at": item["updated_at"],
                     "properties": {name: item["properties"][name] for name in wanted}} for item in chosen]
        return paged(answered, request, default_page_size=3, data_key="results")

    api.route("GET", "/properties", properties)
    api.route("GET", "/contacts", contacts_route)
    return served


__all__ = ["PROPERTIES", "contacts", "serve_properties_api"]
