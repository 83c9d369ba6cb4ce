"""The driver JVM's stderr goes through :func:`framework.spark.session.forward_jvm_stderr`: every line but
the JVM's incubator-module notice reaches ours, whole and in order, however the bytes arrive."""

from __future__ import annotations

import os
import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from framework.spark.session import forward_jvm_stderr

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
