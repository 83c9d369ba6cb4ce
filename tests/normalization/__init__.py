"""Tests of framework.normalization (a package, so that `normalization.conftest` imports as itself even when
bench/normalization.py is on sys.path)."""
