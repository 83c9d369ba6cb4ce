"""The driver JVM's launch (framework/spark/launch.py): its stderr goes through :func:`forward_jvm_stderr`, every
line but the JVM's incubator-module notice reaching ours, whole and in order, however the bytes arrive; and
``SPARK_HOME`` names the launch home for the launch only."""

from __future__ import annotations

import os
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.spark.launch import forward_jvm_stderr, spark_home_set

NOTICE = b"WARNING: Using incubator modules: jdk.incubator.vector\n"


def forwarded(chunks: list[bytes]) -> bytes:
    """What comes out of the forwarder when the JVM writes ``chunks`` one after the other."""
    source, sink = os.pipe()
    out_read, out_write = os.pipe()
    thread = threading.Thread(target=forward_jvm_stderr, args=(source, out_write))
    thread.start()
    for chunk in chunks:
        os.write(sink, chunk)
    os.close(sink)
    thread.join(timeout=10)
    os.close(out_write)
    with os.fdopen(out_read, "rb") as result:
        return result.read()


def test_only_the_notice_is_left_out():
    error = b"Error: Could not find or load main class org.apache.spark.deploy.SparkSubmit\n"
    log = b"26/11/24 12:00:00 ERROR Executor: Exception in task 0.0\n"
    assert forwarded([NOTICE, error, log]) == error + log
    assert forwarded([b"WARNING: Using incubator modules: jdk.incubator.vector, other\n"]) == (
        b"WARNING: Using incubator modules: jdk.incubator.vector, other\n")
    assert forwarded([b"no newline at the end"]) == b"no newline at the end"


@settings(deadline=None, max_examples=40)
@given(st.lists(st.sampled_from([NOTICE, b"a line\n", b"\n", b"ERROR x: y\n", b"partial "]), max_size=8),
       st.integers(1, 40))
def test_any_split_of_the_bytes_gives_the_same_lines(lines, size):
    text = b"".join(lines)
    chunks = [text[i:i + size] for i in range(0, len(text), size)]
    expected = b"".join(line + b"\n" for line in text.split(b"\n")[:-1] if line + b"\n" != NOTICE)
    expected += text.split(b"\n")[-1]
    assert forwarded(chunks) == expected


def test_spark_home_is_set_for_the_launch_only(monkeypatch):
    monkeypatch.setenv("SPARK_HOME", "/before")
    with spark_home_set("/slim"):
        assert os.environ["SPARK_HOME"] == "/slim"
    assert os.environ["SPARK_HOME"] == "/before"
    monkeypatch.delenv("SPARK_HOME")
    with pytest.raises(RuntimeError), spark_home_set("/slim"):
        assert os.environ["SPARK_HOME"] == "/slim"
        raise RuntimeError("the launch failed")
    assert "SPARK_HOME" not in os.environ
    with spark_home_set(None):
        assert "SPARK_HOME" not in os.environ
