"""The randomized comparison of incremental state with airbyte-cdk: how many cursor configurations read alike.

Draws ``--cases`` cursor configurations (tests/parity/state_cases.py: datetime
cursors with or without a step, lookbacks, client-side filtering, per-partition,
global and dependent substreams, record dates on and around the range), runs two
syncs of each through our ``run-manifest --protocol`` and through airbyte-cdk's
``source-declarative-manifest`` against one fake API, and prints how many are
identical (records and final state, in both syncs and from the CDK's state),
then each difference::

    AIRBYTE_CDK_PYTHON=.venv-airbyte/bin/python PYTHONPATH=. .venv/bin/python bench/state_parity.py --cases 160

Each batch of ``--batch`` cases is one manifest, so the CDK starts five times a batch.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

from fakes.api_server import FakeApi  # noqa: E402 - after the path above
from parity.state_cases import KNOWN, draw_many, known_differences, run_batch  # noqa: E402
from parity.test_airbyte_parity import _cdk_available  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=160)
    parser.add_argument("--batch", type=int, default=40)
    parser.add_argument("--seed", type=int, default=37)
    parser.add_argument("--quiet", action="store_true", help="the totals only")
    args = parser.parse_args(argv)
    if not _cdk_available():
        print("AIRBYTE_CDK_PYTHON must name a python with airbyte-cdk", file=sys.stderr)
        return 2
    cases = draw_many(args.cases, args.seed)
    verdicts = []
    began = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        for at in range(0, len(cases), args.batch):
            with FakeApi() as api:
                verdicts += run_batch(api, Path(folder) / f"batch{at}", cases[at:at + args.batch])
    same = sum(v.identical for v in verdicts)
    print(f"{same} of {len(verdicts)} cursor configurations identical ({100 * same / len(verdicts):.0f}%), "
          f"seed {args.seed}, {time.monotonic() - began:.0f} s")
    kinds: Counter[str] = Counter()
    for verdict in verdicts:
        if verdict.identical:
            continue
        known = known_differences(verdict.case)
        kinds[" + ".join(known) or "unexplained"] += 1
        if not args.quiet or not known:
            print(f"\n{verdict.case.name} {verdict.case.knobs()} (may differ by design: {known or 'no'})")
            print(f"  first {verdict.case.first} later {verdict.case.later}")
            for line in verdict.differences:
                print(f"  - {line[:1500]}")
    print("\ndiffering cases, by the documented differences they may show:")
    for kind, count in kinds.most_common():
        print(f"  {count:4d}  {kind}")
    for kind, text in KNOWN.items():
        print(f"  {kind}: {text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
