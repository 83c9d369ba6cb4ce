"""How fast does protocol mode start? Time to the first RECORD and to the end of a small read, fresh processes.

    python bench/protocol_startup.py [--against CHECKOUT] [--runs N]

Starts the example shop API (examples/shop/api.py, no rate limit) on a free port of 127.0.0.1 and runs
``run-manifest examples/shop/manifest.yaml --protocol --streams accounts`` in a fresh process, N times:
the wall time to the first RECORD message (start-up: imports, the manifest, the connector, the first
request) and to the exit, and the process's CPU time. ``--against`` also times another checkout of the
framework (``git worktree add /tmp/before <commit>``), its runs taken in turn with this one's so that both
see the same load; the ratios are then what to read on a busy machine.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHOP = os.path.join(REPO, "examples", "shop")


def _start_api() -> tuple[subprocess.Popen[str], str]:
    api = subprocess.Popen([sys.executable, os.path.join(SHOP, "api.py"), "--port", "0", "--rate-limit", "0"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert api.stdout is not None
    line = api.stdout.readline()
    if not line.startswith("listening on "):
        api.kill()
        raise SystemExit(f"the example API did not start: {line!r}")
    return api, line.split()[2]


def _one_run(checkout: str, config: str) -> tuple[float, float, float]:
    """(seconds to the first RECORD, seconds to the exit, CPU seconds) of one fresh protocol read."""
    env = dict(os.environ, PYTHONPATH=checkout) if checkout else dict(os.environ)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "framework.cli.run", os.path.join(SHOP, "manifest.yaml"),
                              "--config", config, "--protocol", "--streams", "accounts"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=checkout or REPO)
    assert child.stdout is not None
    first = None
    for line in child.stdout:
        if first is None and line.startswith(b'{"type":"RECORD"'):
            first = time.perf_counter() - start
    code = child.wait()
    total = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0 or first is None:
        raise SystemExit(f"the read of {checkout or REPO} failed (exit {code}, records: {first is not None})")
    return first, total, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="CHECKOUT", help="also time this checkout, in turn")
    parser.add_argument("--runs", type=int, default=11, help="fresh processes per checkout (default 11)")
    args = parser.parse_args(argv)
    checkouts = {"this": REPO}
    if args.against:
        checkouts["against"] = os.path.abspath(args.against)
    for path in checkouts.values():  # byte-compiled first, as pip does at install
        compileall.compile_dir(os.path.join(path, "framework"), quiet=1)
    api, url = _start_api()
    try:
        with open(os.path.join(SHOP, "config.json"), encoding="utf-8") as handle:
            settings = json.load(handle)
        settings["base_url"] = url
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            json.dump(settings, handle)
        results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in checkouts}
        for path in checkouts.values():  # one unmeasured run each: the page cache holds both then
            _one_run(path, handle.name)
        for _ in range(args.runs):
            for name, path in checkouts.items():  # in turn, so that a burst of load hits both
                results[name].append(_one_run(path, handle.name))
        os.unlink(handle.name)
    finally:
        api.terminate()
        api.wait(10)
    medians = {}
    for name, runs in results.items():
        first, total, cpu = (statistics.median(r[i] for r in runs) for i in range(3))
        medians[name] = (first, total, cpu)
        label = "" if name == "this" else f" ({checkouts[name]})"
        print(f"protocol read{label}: first RECORD median {first * 1000:.0f} ms (best "
              f"{min(r[0] for r in runs) * 1000:.0f}), exit median {total * 1000:.0f} ms, CPU median "
              f"{cpu * 1000:.0f} ms over {len(runs)} runs")
    if args.against:
        this, that = medians["this"], medians["against"]
        print(f"this / against: first RECORD {this[0] / that[0]:.2f}, exit {this[1] / that[1]:.2f}, "
              f"CPU {this[2] / that[2]:.2f}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main(sys.argv[1:])
