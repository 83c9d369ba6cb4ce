"""The framework's imports stay visible: at the top of each module, each exception listed here with its reason.

An import of a framework module inside a function hides a dependency (and often a cycle) from a reader of the
module's top. Some are deliberate: a module only some manifests need stays off the start-up of the others, or
two modules need each other. Each such import is in :data:`IN_FUNCTION`, keyed by (importing module, imported
module); an import missing from it fails, and so does an entry that no longer occurs, so that the list stays
true. ``if TYPE_CHECKING:`` blocks are not imports at run time, and ``framework/cli/`` (the commands, each
loading what it runs) is left out. Module-level ``__getattr__`` (a lazy attribute loader) is refused likewise,
but for the modules of :data:`MODULE_GETATTR`.
"""

from __future__ import annotations

import ast
from pathlib import Path

from framework_imports import MODULES, ROOT, imports, tree, within

EXCLUDED = ("framework.cli",)

IN_FUNCTION: dict[tuple[str, str], str] = {
    # the package root runs for every `import framework.x`: it stays cheap
    ("framework", "framework.manifest"): "load_manifest/check_manifest: the package root stays cheap",
    ("framework.api.read", "framework.spark.datasource"):
        "pyspark loads after require_spark_extra, which names the fix when it is missing",
    ("framework.api.read", "framework.spark.session"):
        "pyspark loads after require_spark_extra, which names the fix when it is missing",
    # start-up: modules only some manifests (or some streams) need
    ("framework.manifest.checks", "framework.manifest.custom_checks"):
        "reads the custom code's Python source: only a manifest with custom components",
    ("framework.components.retriever", "framework.components.records.decoders"):
        "the decoders of formats other than JSON load only for a manifest that names one",
    ("framework.components.records.extraction", "framework.components.records.json_stream"):
        "ijson is loaded only for a JSON page past the response size cap, streamed",
    ("framework.components.records.extraction", "framework.components.records.decoders"):
        "the decoders load only for a manifest that names one (it built the decoder, so it is loaded)",
    ("framework.components.retriever", "framework.components.query_properties"):
        "QueryProperties' runtime loads only for a requester that has them",
    ("framework.engine.connector", "framework.components.query_properties"):
        "QueryProperties' runtime loads with the first catalog only",
    ("framework.components.stream", "framework.components.records.file_upload"):
        "brings the storage layer: only a stream with a file_uploader",
    ("framework.protocol.discover", "framework.components.records.file_upload"):
        "brings the storage layer: only a stream with a file_uploader",
    ("framework.components.stream", "framework.components.custom.airbyte"):
        "the airbyte-cdk bridge: only a manifest with custom components",
    ("framework.components.custom.construct", "framework.components.records.extraction"):
        "the records' runtime is not loaded by the custom-code builders, which need it only for a facade",
    ("framework.components.custom.construct", "framework.components.records.transformations"):
        "transformations load only for a manifest that has some (their builders, through the catalog)",
    ("framework.engine.connector", "framework.components.state_migrations"):
        "their module loads only for a stream that has state migrations",
    ("framework.engine.connector", "framework.engine.config_migration"):
        "config normalization loads only for a spec with config_normalization_rules",
    ("framework.engine.sync", "framework.engine.prefetch"): "the parents' prefetch: only a stream with parent streams",
    ("framework.engine.plan", "framework.engine.bridge"): "the airbyte-cdk bridge: only streams airbyte-cdk reads",
    ("framework.engine.worker", "framework.engine.bridge"): "the airbyte-cdk bridge: only streams airbyte-cdk reads",
    ("framework.normalization.files", "framework.normalization.tables"):
        "the splitting code and pyarrow.compute load on the executors (and their warm-up) only",
    ("framework.formats", "framework.formats.parquet"): "a writer loads when its format is asked for: pyarrow.parquet",
    ("framework.formats.rewrite", "framework.formats.parquet"):
        "the Parquet writer (pyarrow.parquet) loads only when a stream's files are rewritten, not with the pipeline",
    ("framework.formats", "framework.formats.avro"): "a writer loads when its format is asked for: fastavro",
    ("framework.formats", "framework.formats.text"): "a writer loads when its format is asked for: JSONL and CSV",
    ("framework.formats", "framework.formats.replicant"):
        "a writer loads when its format is asked for: pyarrow.compute",
    # cycles: the imported module imports the importing one
    ("framework.components.partitions", "framework.components.delegating"):
        "cycle: delegating imports stream, which imports partitions",
    # change data and the Spark worker daemon
    ("framework.engine.config_migration", "framework.components.config_rules"):
        "config rules' runtime loads only for a spec whose rules have validations",
    ("framework.tables.factory", "framework.tables.delta"):
        "a Delta table's module loads only for --format delta (the factory serves both table formats)",
    ("framework.tables.factory", "framework.tables.iceberg"):
        "an Iceberg table's modules load only for --format iceberg (the factory serves both table formats)",
    ("framework.spark.pipeline", "framework.cdc.plan"): "change data's plan loads only for a realtime (Replicant) format",
    ("framework.spark.pipeline", "framework.cdc.apply"):
        "the change-data apply (pyarrow.parquet, pandas) loads only for a realtime format",
    ("framework.spark.tasks", "framework.cdc.staging"): "change data's staging writer loads in a task only for a realtime format",
    ("framework.spark.daemon", "framework.spark.tasks"): "the worker daemon imports what every task needs once, after the path fix, before it forks",
    ("framework.spark.daemon", "framework.models.destination"): "the worker daemon imports what every task needs once, after the path fix, before it forks",
    ("framework.spark.daemon", "framework.typed.pandas_lookup"): "the worker daemon imports what every task needs once, after the path fix, before it forks",
}

MODULE_GETATTR: dict[str, str] = {
    "framework": "the Python API (framework.sync, framework.read and their report types) loads on first use",
}


def _in_function_imports(module: str, path: Path) -> list[tuple[str, int]]:
    """``(imported framework module, line)`` of every import inside a function of the module at ``path``."""
    return [(found.target, found.line) for found in imports(module, path) if found.runs and found.in_function]


def _checked() -> dict[str, Path]:
    return {name: path for name, path in MODULES.items()
            if not any(within(name, skip) for skip in EXCLUDED)}


def test_every_in_function_import_of_a_framework_module_is_listed_with_its_reason():
    found: dict[tuple[str, str], list[str]] = {}
    for module, path in _checked().items():
        for imported, line in _in_function_imports(module, path):
            found.setdefault((module, imported), []).append(f"{path.relative_to(ROOT)}:{line}")
    unlisted = [f"{where[0]}: {key[0]} imports {key[1]} inside a function" for key, where in sorted(found.items())
                if key not in IN_FUNCTION]
    assert not unlisted, ("move these imports to the top of their module, or list them in IN_FUNCTION with the "
                          "reason:\n" + "\n".join(unlisted))
    stale = sorted(key for key in IN_FUNCTION if key not in found)
    assert not stale, f"IN_FUNCTION lists imports that no longer occur: {stale}"


def test_every_listed_reason_is_one_line():
    assert all(reason.strip() and "\n" not in reason for reason in IN_FUNCTION.values())
    assert all(reason.strip() and "\n" not in reason for reason in MODULE_GETATTR.values())


def test_no_module_loads_its_attributes_lazily_but_the_listed_ones():
    found = {module for module, path in MODULES.items()
             if any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "__getattr__"
                    for node in tree(path).body)}
    assert not found - set(MODULE_GETATTR), f"module-level __getattr__ in {sorted(found - set(MODULE_GETATTR))}"
    assert not set(MODULE_GETATTR) - found, f"MODULE_GETATTR lists modules without one: " \
                                            f"{sorted(set(MODULE_GETATTR) - found)}"


def test_the_walk_finds_in_function_imports_and_skips_type_checking(tmp_path):
    source = tmp_path / "example.py"
    source.write_text("from typing import TYPE_CHECKING\nimport framework.errors\nif TYPE_CHECKING:\n"
                      "    from framework.models import DeclarativeSource\n"
                      "def f():\n    from framework.values import replace\n    if TYPE_CHECKING:\n"
                      "        import framework.masking\n    return replace\n")
    assert list(_in_function_imports("framework.example", source)) == [("framework.values", 6)]
