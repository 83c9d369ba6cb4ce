"""What pydantic builds from a prepared manifest, next to the quick build (framework/manifest/vouch.py):
shared by tests/manifest/conftest.py and tests/manifest/test_vouch.py."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from framework.manifest.vouch import quick_build
from framework.models import DeclarativeSource


def difference(quick: Any, full: Any, path: tuple = ()) -> str | None:
    """Where two built values differ (type, value, the fields given, extra keys), or None when they do not."""
    if type(quick) is not type(full):
        return f"{path}: {type(quick).__name__} vs {type(full).__name__}"
    if isinstance(quick, BaseModel):
        if quick.__pydantic_fields_set__ != full.__pydantic_fields_set__:
            return f"{path}: fields set {sorted(quick.__pydantic_fields_set__)} vs {sorted(full.__pydantic_fields_set__)}"
        if quick.__pydantic_extra__ != full.__pydantic_extra__ or quick.__dict__.keys() != full.__dict__.keys():
            return f"{path}: other keys"
        quick, full = quick.__dict__, full.__dict__
    if isinstance(quick, dict):
        if quick.keys() != full.keys():
            return f"{path}: keys {sorted(map(str, quick))} vs {sorted(map(str, full))}"
        return next((found for key in quick if (found := difference(quick[key], full[key], path + (key,)))), None)
    if isinstance(quick, (list, tuple)):
        if len(quick) != len(full):
            return f"{path}: {len(quick)} items vs {len(full)}"
        return next((found for i, (a, b) in enumerate(zip(quick, full)) if (found := difference(a, b, path + (i,)))),
                    None)
    return None if quick == full else f"{path}: {quick!r} vs {full!r}"


def full_build(data: Any) -> DeclarativeSource | None:
    try:
        return DeclarativeSource.model_validate(data)
    except ValidationError:
        return None


def assert_same_as_pydantic(data: Any, quick: Any = quick_build) -> Any:
    """Where the quick build vouches for ``data``, pydantic accepts it and builds equal models; returns the build."""
    built = quick(data)
    if built is not None:
        full = full_build(data)
        assert full is not None, "the quick build vouches for a manifest pydantic refuses"
        assert difference(built, full) is None, difference(built, full)
    return built
