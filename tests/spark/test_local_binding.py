"""A local Spark's driver listens on loopback only: every listening socket of the running session's JVM."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]


def listening(pid: int) -> list[str]:
    """The local addresses (``address:port``, hex as /proc shows them) of the TCP sockets ``pid`` listens on."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                found.append(fields[1])
    return found


def test_every_socket_the_local_driver_listens_on_is_on_loopback(spark):
    process = getattr(spark.sparkContext._gateway, "proc", None)
    assert process is not None, "the tests' local session launches its own JVM: its sockets are what is checked"
    context = spark.sparkContext
    assert context.getConf().get("spark.driver.bindAddress") == "127.0.0.1"
    assert context.getConf().get("spark.driver.host") == "127.0.0.1"
    addresses = listening(process.pid)
    assert len(addresses) >= 2  # py4j's gateway, the driver's RPC (with the block manager's)
    loopback = ("0100007F:", "00000000000000000000000001000000:", "0000000000000000FFFF00000100007F:")
    assert all(address.startswith(loopback) for address in addresses), addresses
