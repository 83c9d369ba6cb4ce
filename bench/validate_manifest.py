"""How fast is validate-manifest? Prints wall time per run and peak memory.

    python bench/validate_manifest.py [--against CHECKOUT] [MANIFEST...]

Measures (1) the whole command as a pre-commit hook runs it, in a fresh
process, on one manifest (wall and CPU time), and (2) the in-process check per manifest once the
modules are loaded. Defaults to the example manifest, plus the Airbyte corpus
when MANIFEST_CORPUS is set. ``--against`` also times the cold check of another checkout of the
framework (an older commit, say: ``git worktree add /tmp/before HEAD~3``), its runs taken in turn
with this one's, so that both see the same load; then the ratio is what to read on a busy machine.
"""

from __future__ import annotations

import argparse
import compileall
import glob
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(REPO, "examples", "shop", "manifest.yaml")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="CHECKOUT", help="also time this checkout's cold check, in turn")
    parser.add_argument("--runs", type=int, default=11, help="fresh processes per checkout (default 11)")
    parser.add_argument("files", nargs="*", metavar="MANIFEST")
    args = parser.parse_args(argv)
    files = args.files or [EXAMPLE]
    corpus = os.environ.get("MANIFEST_CORPUS")
    if not args.files and corpus and os.path.isdir(corpus):
        files += sorted(glob.glob(os.path.join(corpus, "*.yaml")))
    script = shutil.which("validate-manifest", path=os.path.dirname(sys.executable)) or "validate-manifest"

    checkouts = {"this": os.environ.get("PYTHONPATH", "")}
    if args.against:
        checkouts["against"] = os.path.abspath(args.against)
    # byte-compiled first, as pip does at install: under PYTHONDONTWRITEBYTECODE=1 every run would compile
    # the framework's modules again
    for path in {REPO, *(p for p in checkouts.values() if p)}:
        if os.path.isdir(os.path.join(path, "framework")):
            compileall.compile_dir(os.path.join(path, "framework"), quiet=1)
    runs: dict[str, list[float]] = {name: [] for name in checkouts}
    cpu: dict[str, list[float]] = {name: [] for name in checkouts}
    for _ in range(args.runs):
        for name, path in checkouts.items():  # in turn, so that a burst of load hits both
            env = dict(os.environ, PYTHONPATH=path) if path else dict(os.environ)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run([script, "--quiet", files[0]], capture_output=True, check=False, env=env)
            runs[name].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    # CPU time (user + system) moves much less than the wall time when other work shares the cores
    for name in checkouts:
        label = "" if name == "this" else f" ({checkouts[name]})"
        print(f"validate-manifest{label}, one manifest, fresh process: median "
              f"{statistics.median(runs[name]) * 1000:.0f} ms, best {min(runs[name]) * 1000:.0f} ms over "
              f"{len(runs[name])} runs; CPU median {statistics.median(cpu[name]) * 1000:.0f} ms, "
              f"best {min(cpu[name]) * 1000:.0f} ms")
    if args.against:
        print(f"this / against: wall median {statistics.median(runs['this']) / statistics.median(runs['against']):.2f}"
              f", CPU median {statistics.median(cpu['this']) / statistics.median(cpu['against']):.2f}")

    start = time.perf_counter()
    from framework.manifest import check_manifest

    import_time = time.perf_counter() - start
    per_file = []
    for path in files:
        start = time.perf_counter()
        check_manifest(path)
        per_file.append(time.perf_counter() - start)
    again = []
    for path in files:
        start = time.perf_counter()
        check_manifest(path)
        again.append(time.perf_counter() - start)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"import framework.manifest: {import_time * 1000:.0f} ms")
    print(f"in-process check of {len(files)} manifests: first pass {sum(per_file) * 1000:.0f} ms "
          f"({len(files) / sum(per_file):.0f} manifests/s), warm pass {sum(again) * 1000:.0f} ms "
          f"({len(files) / sum(again):.0f} manifests/s), slowest {max(again) * 1000:.1f} ms")
    print(f"peak memory: {peak_mib:.0f} MiB")


if __name__ == "__main__":
    main(sys.argv[1:])
