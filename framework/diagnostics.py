"""A problem found in an input file, with its place and, where clear, its fix."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One problem: ``file:line:col: severity: message`` plus a JSON path and a code.

    ``line`` and ``column`` are 1-based; 0 means the problem has no single place
    (an empty file, say). ``path`` is the JSON path of the value in the resolved
    manifest (``streams[0].retriever.requester.url_base``), empty at the root.
    """

    file: str
    line: int
    column: int
    severity: Severity
    code: str
    message: str
    path: str = ""
    fix: str | None = field(default=None, compare=False)

    def format(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}"
        text = f"{where}: {self.severity}: {self.message}"
        if self.path:
            text += f" (at {self.path})"
        if self.fix:
            text += f"\n    fix: {self.fix}"
        return text

    def as_json(self) -> dict:
        data = asdict(self)
        if data["fix"] is None:
            del data["fix"]
        return data


def json_path(parts: tuple) -> str:
    """``('streams', 0, 'name')`` -> ``streams[0].name``."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text
