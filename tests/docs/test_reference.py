"""docs/reference.md is what framework.models.reference makes from the models now.

The page is generated; when a model changes, regenerate it (the failure says
how) instead of editing it by hand. Also checks that the page covers every
supported component and every field, so a generator bug cannot drop one.
"""

from __future__ import annotations

import re
from pathlib import Path

from framework.models import REGISTRY, UNSUPPORTED
from framework.models.reference import COMMAND, render

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference.md"


def test_committed_reference_is_up_to_date():
    assert REFERENCE.exists(), f"docs/reference.md is missing; make it with `{COMMAND}`"
    committed = REFERENCE.read_text(encoding="utf-8")
    assert committed == render(), (
        f"docs/reference.md differs from what the models make now; regenerate it with `{COMMAND}`")


def test_every_component_and_field_is_there_once():
    page = render()
    for model in REGISTRY.values():
        name = model.type_name()
        sections = re.findall(rf"^### {re.escape(name)}\n\n(.*?)(?=^##)", page, flags=re.S | re.M)
        assert len(sections) == 1, f"{name}: {len(sections)} sections"
        for field_name, info in model.model_fields.items():
            key = info.alias or field_name
            if key in ("type", "$parameters"):
                continue
            assert f"| `{key}` |" in sections[0], f"{name}.{key} is missing from its table"
    for name in UNSUPPORTED:
        assert f"| `{name}` |" in page

