"""Building record components from manifest dicts, and responses for them."""

from __future__ import annotations

from typing import Any

import orjson
from requests.structures import CaseInsensitiveDict

from framework.components.context import BuildContext, builder_of
from framework.components.http.request import HttpRequest
from framework.components.http.transport import HttpResponse
from framework.components.records import (  # noqa: F401  (registers the builders)
    expansion,
    reshaping,
    selection,
    transformations,
)
from framework.interpolation import TemplateEngine
from framework.models import REGISTRY
from framework.temporal.clock import FixedClock

_MODELS = REGISTRY


def context(config: dict | None = None, **kwargs: Any) -> BuildContext:
    from datetime import datetime, timezone

    clock = FixedClock(datetime(2024, 1, 2, tzinfo=timezone.utc))
    return BuildContext(config=config or {}, engine=TemplateEngine(clock), transport=object(), clock=clock,
                        **kwargs)


def build(data: dict, ctx: BuildContext | None = None) -> Any:
    model = _MODELS[data["type"]].model_validate(data)
    return builder_of(model.type)(model, ctx or context(), ("streams", 0, "retriever", "record_selector"))


def response(body: Any, status: int = 200, content_type: str = "application/json") -> HttpResponse:
    if isinstance(body, (bytes, str)):
        content = body.encode() if isinstance(body, str) else body
    else:
        content = orjson.dumps(body)
    return HttpResponse(status, CaseInsensitiveDict({"Content-Type": content_type}), content,
                        HttpRequest("GET", "http://x/y"))


def selector(field_path: list[str], **more: Any) -> Any:
    return build({"type": "RecordSelector", "extractor": {"type": "DpathExtractor", "field_path": field_path},
                  **more})
