"""Helpers for the custom component tests: a components.py in a temp folder and a BuildContext over it."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import orjson
from requests.structures import CaseInsensitiveDict

from framework.components.context import BuildContext
from framework.components.custom.loader import CodeLoader
from framework.components.http.request import HttpRequest
from framework.components.http.transport import HttpResponse
from framework.masking import Masker
from framework.models.custom import CUSTOM_KINDS


def write_components(folder: Path, code: str, name: str = "components.py") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(code))
    return path


def context(folder: Path, *, allowed: bool = True, config: dict | None = None,
            secrets: tuple[str, ...] = ()) -> BuildContext:
    return BuildContext(config or {}, base_dir=str(folder), code=CodeLoader(str(folder), allowed),
                        mask=Masker.of(secrets), locate=lambda path: "manifest.yaml:" + ".".join(map(str, path)))


def model(kind: str, class_name: str, **options: Any) -> Any:
    return CUSTOM_KINDS[kind].model_validate({"type": kind, "class_name": class_name, **options})


def response(body: Any, status: int = 200, headers: dict | None = None, url: str = "http://api.test/items") -> HttpResponse:
    content = body if isinstance(body, bytes) else orjson.dumps(body)
    return HttpResponse(status, CaseInsensitiveDict({"Content-Type": "application/json", **(headers or {})}),
                        content, HttpRequest("GET", url))
