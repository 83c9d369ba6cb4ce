"""``--version`` for every command: the installed package's version (the wheel's metadata, which pyproject.toml
fills from ``framework.__version__``), looked up only when asked: importlib.metadata costs about 20 ms to import."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any


class _VersionAction(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from importlib import metadata

        try:
            version = metadata.version("manifest-framework")
        except metadata.PackageNotFoundError:  # the code run from a checkout that was never installed
            version = "unknown (not installed: pip install the package)"
        print(f"{parser.prog} {version}", file=sys.stdout)
        parser.exit(0)


def add_version_flag(parser: argparse.ArgumentParser) -> None:
    """Give ``parser`` a ``--version`` that prints ``<prog> <version>`` and exits 0."""
    parser.add_argument("--version", action=_VersionAction, help="print the package's version and exit")


__all__ = ["add_version_flag"]
