"""An Airflow DAG that syncs a connector every hour with ``framework.sync`` (docs/python-api.md).

Put it in the DAGs folder of a worker that has ``manifest-framework[spark]`` installed and Java. Each run
continues from the state saved next to the output, so a retried or late run reads only what is new. A failed
stream raises ``framework.SyncFailed``, which fails the task (and Airflow retries it); what the sync committed
before the failure stands.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.decorators import dag, task

import framework

MANIFEST = "/opt/connectors/shop/manifest.yaml"
CONFIG = "/opt/connectors/shop/config.json"  # a file: rotated OAuth tokens and migrated configs are saved in it
OUTPUT = "s3://lake/raw/shop"


@dag(schedule="@hourly", start_date=datetime(2026, 1, 1), catchup=False, max_active_runs=1,
     default_args={"retries": 2, "retry_delay": timedelta(minutes=5)})
def shop_sync():
    @task
    def sync() -> dict:
        def log(progress: framework.Progress) -> None:
            if progress.event != "planned":
                left = "?" if progress.time_left_s is None else f"{progress.time_left_s:.0f} s"
                print(f"{progress.stream}: {progress.records} records, {left} left")

        report = framework.sync(MANIFEST, CONFIG, output=OUTPUT, on_progress=log)
        # what the next tasks (and XCom) get: small and JSON-able
        return {"sync_id": report.sync_id, "records": {s.name: s.records for s in report.streams}}

    sync()


shop_sync()
