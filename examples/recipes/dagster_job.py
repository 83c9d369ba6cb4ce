"""A Dagster asset per sync of a connector, with ``framework.sync`` (docs/python-api.md).

Load it with ``dagster dev -f dagster_job.py`` on a machine with ``manifest-framework[spark]`` and Java.
The asset's metadata shows each stream's records and files; a failed stream raises ``framework.SyncFailed``,
which fails the run. The state is kept next to the output, so each materialization reads only what is new.
"""

from __future__ import annotations

from dagster import AssetExecutionContext, Definitions, MaterializeResult, ScheduleDefinition, asset, define_asset_job

import framework

MANIFEST = "connectors/shop/manifest.yaml"
CONFIG = "connectors/shop/config.json"
OUTPUT = "s3://lake/raw/shop"


@asset
def shop_raw(context: AssetExecutionContext) -> MaterializeResult:
    def log(progress: framework.Progress) -> None:
        if progress.event == "done":
            context.log.info(f"{progress.stream}: {progress.records} records")

    report = framework.sync(MANIFEST, CONFIG, output=OUTPUT, on_progress=log)
    metadata: dict[str, int | str] = {"sync_id": report.sync_id, "output": report.output}
    for stream in report.streams:
        metadata[f"{stream.name}_records"] = stream.records
        metadata[f"{stream.name}_files"] = len(stream.files)
    return MaterializeResult(metadata=metadata)


hourly = ScheduleDefinition(job=define_asset_job("shop_sync", selection=[shop_raw]), cron_schedule="0 * * * *")
defs = Definitions(assets=[shop_raw], schedules=[hourly])
