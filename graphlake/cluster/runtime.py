"""Attach to a Ray cluster for one command, or start one on this machine.

Ray is an optional dependency (``pip install "graphlake[ray]"``). A driver attached to an
existing cluster (``address``) leaves it running; one it started itself it stops again. The
workers must be able to import graphlake (the same version as the driver) and read the
source files and the lake's staging folder: on one machine that holds by construction, on
several machines it means a shared filesystem or object storage (docs/scaling.md).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from graphlake.errors import GraphlakeError, attempt_import


@contextmanager
def attached(address: str | None = None, *, workers: int | None = None) -> Iterator[Any]:
    """The ``ray`` module, initialised for the duration of the block.

    ``address``: a running cluster's GCS address (``host:port``, or ``auto`` for the one
    ``ray start`` left on this machine; default ``$RAY_ADDRESS``); none starts a private
    cluster of ``workers`` CPUs (default: every core) for the block. A driver already
    attached (a notebook that called ``ray.init``) is used as it is and left attached."""
    ray = attempt_import("ray", "ray")
    if ray.is_initialized():
        yield ray
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no network calls from a CLI run
    address = address or os.environ.get("RAY_ADDRESS") or None  # as ray.init reads it
    kwargs: dict = {"log_to_driver": False, "configure_logging": False}
    if address:
        _check_reachable(address)
        kwargs["address"] = address
    else:
        kwargs.update(num_cpus=workers or os.cpu_count() or 1, include_dashboard=False)
    try:
        with warnings.catch_warnings():
            # LanceDB warns about forks; ray.init's are fork+exec of its own processes
            warnings.filterwarnings("ignore", "lancedb fork support", RuntimeWarning)
            ray.init(**kwargs)
    except ConnectionError as exc:
        raise _unreachable(address, str(exc)) from exc
    try:
        yield ray
    finally:
        ray.shutdown()


#: how long the cluster's GCS port may take to accept a connection
CONNECT_TIMEOUT_S = 10.0


def _check_reachable(address: str) -> None:
    """Fail in seconds, with what to do, when nothing listens at a ``host:port`` address:
    ``ray.init`` itself retries for minutes, printing its own logs. (``auto`` and
    ``ray://`` client addresses are left to Ray.)"""
    import socket

    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise _unreachable(address, exc.strerror or str(exc)) from exc


def _unreachable(address: str | None, why: str) -> GraphlakeError:
    return GraphlakeError(
        f"no Ray cluster answers at {address} ({why}). Start one with `ray start --head` (it "
        "prints the address), or leave --address (and $RAY_ADDRESS) out to run one on this "
        "machine"
    )


def cluster_cpus(ray) -> int:
    """CPUs the cluster offers now (at least 1): how many tasks run at once."""
    return max(1, int(ray.cluster_resources().get("CPU", 1)))
