"""How fast is validate-manifest? Prints wall time per run and peak memory.

    python bench/validate_manifest.py [MANIFEST...]

Measures (1) the whole command as a pre-commit hook runs it, in a fresh
process, on one manifest (wall and CPU time), and (2) the in-process check per manifest once the
modules are loaded. Defaults to the example manifest, plus the Airbyte corpus
when MANIFEST_CORPUS is set.
"""

from __future__ import annotations

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
    files = argv or [EXAMPLE]
    corpus = os.environ.get("MANIFEST_CORPUS")
    if not argv and corpus and os.path.isdir(corpus):
        files += sorted(glob.glob(os.path.join(corpus, "*.yaml")))
    script = shutil.which("validate-manifest", path=os.path.dirname(sys.executable)) or "validate-manifest"

    runs, cpu = [], []
    for _ in range(11):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([script, "--quiet", files[0]], capture_output=True, check=False)
        runs.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    # CPU time (user + system) moves much less than the wall time when other work shares the cores
    print(f"validate-manifest, one manifest, fresh process: median {statistics.median(runs) * 1000:.0f} ms, "
          f"best {min(runs) * 1000:.0f} ms over {len(runs)} runs; CPU median {statistics.median(cpu) * 1000:.0f} ms, "
          f"best {min(cpu) * 1000:.0f} ms")

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
