"""``validate-manifest FILE...``: check manifests without running anything.

Exit status: 0 when every file is valid (warnings allowed), 1 when any error
was found, 2 on a usage error. Never imports pyspark.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from framework.cli.lean import lean_start
from framework.diagnostics import Diagnostic
from framework.errors import ConfigError

if TYPE_CHECKING:
    from framework.manifest.config_check import ConfigFile


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="validate-manifest",
        description="Check connector manifests: schema, references, templates, durations, formats, streams.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="manifest YAML files to check")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text (file:line:col: severity: message) or a JSON array for tools")
    parser.add_argument("--config", metavar="CONFIG.json",
                        help="also check this connector config against each manifest's spec")
    parser.add_argument("--strict", action="store_true",
                        help="treat every unknown key as an error (by default a key that is not a likely "
                             "misspelling is a warning and ignored, as Airbyte ignores it)")
    parser.add_argument("--quiet", "-q", action="store_true", help="print problems only, no summary")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # A check makes many objects and no garbage worth collecting: the collector would only walk them (about
    # 5 % of a cold check, 3 % more while the models' classes are made: the checker is imported in here, with
    # the collector off); see framework.cli.lean.
    with lean_start(program=argv is None):
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    missing = [f for f in args.files if not os.path.isfile(f)]
    if missing:
        for name in missing:
            print(f"validate-manifest: error: no such file: {name}", file=sys.stderr)
        return 2
    config: ConfigFile | None = None
    if args.config:
        from framework.manifest.config_check import read_config_file  # only with --config: it needs jsonschema

        try:  # read once (a pipe works), by run-manifest's rule: a JSON object
            config = read_config_file(args.config)
        except ConfigError as exc:
            print(f"validate-manifest: error: {exc}", file=sys.stderr)
            return 2

    from framework.manifest import check_manifest  # here, not at the top: see main

    diagnostics: list[Diagnostic] = []
    for path in args.files:
        try:
            checked = check_manifest(path, strict=args.strict, config=config)
        except Exception as exc:  # noqa: BLE001 - one file's crash must not hide the others' results
            diagnostics.append(Diagnostic(path, 1, 1, "error", "internal-error",
                                          f"validate-manifest could not check this file ({type(exc).__name__}: "
                                          f"{exc})", "", "please report this with the file"))
            continue
        diagnostics.extend(checked.diagnostics)
        if config is not None:
            spec = (checked.data or {}).get("spec") if isinstance(checked.data, dict) else None
            connection = spec.get("connection_specification") if isinstance(spec, dict) else None
            if connection is None:
                print(f"validate-manifest: {path} has no spec.connection_specification; "
                      f"config {args.config} not checked", file=sys.stderr)
            else:
                from framework.manifest.config_check import check_config

                diagnostics.extend(check_config(connection, config))

    errors = sum(1 for d in diagnostics if d.severity == "error")
    warnings = len(diagnostics) - errors
    if args.format == "json":
        json.dump([d.as_json() for d in diagnostics], sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for diagnostic in diagnostics:
            print(diagnostic.format())
        if not args.quiet:
            files = len(args.files)
            print(f"{files} file{'s' * (files != 1)} checked: {errors} error{'s' * (errors != 1)}, "
                  f"{warnings} warning{'s' * (warnings != 1)}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
