"""pyarrow's lookup of pandas, settled before the first batch (framework/typed/pandas_lookup.py).

Each case runs in a fresh interpreter: the lookup is made once per process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("pandas")


def _run(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_settled_without_pandas_typed_batches_never_import_it_and_pandas_still_works():
    seen = _run("""
        import json, sys
        from framework.typed.pandas_lookup import settle_without_pandas
        from framework.typed.converter import RecordConverter
        settled = settle_without_pandas()
        converter = RecordConverter.from_json_schema(
            {"type": "object", "properties": {"id": {"type": "integer"}, "at": {"type": "string", "format": "date-time"},
             "tags": {"type": "array", "items": {"type": "string"}}}}, stream="s")
        batch = converter.convert([{"id": 1, "at": "2024-01-01T00:00:00Z", "tags": ["a"]}, {"id": "x"}],
                                  extracted_at_ms=1, generation_id=0, sync_id=1)
        after_batch = "pandas" in sys.modules
        import pyarrow as pa
        frame = pa.table({"a": [1.5]}).to_pandas()  # pyarrow's own pandas functions import it when asked
        print(json.dumps({"settled": settled, "after_batch": after_batch, "rows": batch.num_rows,
                          "nulled": converter.last_nulled, "frame": float(frame["a"][0])}))
    """)
    assert seen == {"settled": True, "after_batch": False, "rows": 2, "nulled": 1, "frame": 1.5}


def test_with_pandas_imported_first_it_is_left_alone():
    seen = _run("""
        import json, sys
        import pandas
        from framework.typed.pandas_lookup import settle_without_pandas
        import pyarrow as pa
        settled = settle_without_pandas()
        series = pa.array(pandas.Series([1.0, float("nan")]))  # pandas' NaN is null, as pyarrow reads a series
        print(json.dumps({"settled": settled, "nulls": series.null_count}))
    """)
    assert seen == {"settled": False, "nulls": 1}


def test_settled_with_pandas_it_is_imported_now():
    seen = _run("""
        import json, sys
        from framework.typed.pandas_lookup import settle_with_pandas
        before = "pandas" in sys.modules
        settle_with_pandas()
        print(json.dumps({"before": before, "after": "pandas" in sys.modules}))
    """)
    assert seen == {"before": False, "after": True}
