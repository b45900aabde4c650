"""Attach to a Ray cluster for one command, or start one on this machine.

Ray is an optional dependency (``pip install "graphlake[ray]"``). A driver attached to an
existing cluster (``address``) leaves it running; one it started itself it stops again, and
that private cluster listens on 127.0.0.1 only, requires a token made for it, and does not
outlive the command even when the command is killed (:class:`_PrivateCluster`). The
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
        private = None
    else:
        kwargs.update(num_cpus=workers or os.cpu_count() or 1, include_dashboard=False)
        private = _PrivateCluster(ray)
    try:
        if private is not None:
            private.open()
        with warnings.catch_warnings():
            # LanceDB warns about forks; ray.init's are fork+exec of its own processes
            warnings.filterwarnings("ignore", "lancedb fork support", RuntimeWarning)
            ray.init(**kwargs)
        if private is not None:
            private.started()
    except ConnectionError as exc:
        if private is not None:
            private.close()
        raise _unreachable(address, str(exc)) from exc
    except BaseException:
        if private is not None:
            private.close()
        raise
    try:
        yield ray
    finally:
        try:
            ray.shutdown()
        finally:
            if private is not None:
                private.close()


#: What a private cluster's processes inherit: single-node mode (Ray binds its GCS, raylet
#: and agents to the loopback address, as it does on macOS and Windows) and token auth with
#: a token made for this cluster
_PRIVATE_ENV = ("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN")


class _PrivateCluster:
    """A cluster started by this command for this command: bound to 127.0.0.1, with token
    authentication, and torn down with the command even when it is killed (a reaper,
    :mod:`graphlake.cluster.reaper`, stops every process that inherited its mark)."""

    def __init__(self, ray) -> None:
        self.ray = ray
        self.saved: dict[str, str | None] = {}
        self.reaper: Any = None  # graphlake.cluster.reaper.Reaper while open
        self.constant: bool | None = None

    def open(self) -> None:
        import secrets

        from graphlake.cluster import reaper

        values = ("0", "token", secrets.token_hex(32))
        for name, value in zip(_PRIVATE_ENV, values, strict=True):
            self.saved[name] = os.environ.get(name)
            os.environ[name] = value
        # ray read the first one when it was imported; its processes read the environment
        constants = self.ray._private.ray_constants
        self.constant = constants.ENABLE_RAY_CLUSTER
        constants.ENABLE_RAY_CLUSTER = False
        _reload_auth()
        self.reaper = reaper.start()

    def started(self) -> None:
        """The cluster is up: tell the reaper its session folder and processes."""
        import psutil

        node = getattr(self.ray._private.worker, "_global_node", None)
        session_dir = node.get_session_dir_path() if node is not None else None
        children = [p.pid for p in psutil.Process().children(recursive=True)]
        if self.reaper is not None:
            self.reaper.announce(session_dir, children)

    def close(self) -> None:
        from graphlake.cluster import reaper

        if self.reaper is not None:
            self.reaper.release()
            self.reaper = None
        os.environ.pop(reaper.MARK, None)
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self.saved = {}
        if self.constant is not None:
            self.ray._private.ray_constants.ENABLE_RAY_CLUSTER = self.constant
            self.constant = None
        _reload_auth()


def _reload_auth() -> None:
    """Make this process's Ray read the auth settings of the environment again: its config
    and token are read once and cached (as Ray's own tests reset them)."""
    try:
        from ray._raylet import AuthenticationTokenLoader, Config  # type: ignore[attr-defined]
    except ImportError:  # a Ray without token auth: nothing cached
        return
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


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


#: how long a driver waits for the next result of its cluster before it gives up (default)
STALL_S = 1800.0


def stall_s() -> float:
    """Seconds a driver waits for the next result of its tasks (``GRAPHLAKE_RAY_STALL_S``,
    default :data:`STALL_S`): a task or actor that the cluster neither finishes nor reports
    lost (a node that hangs, a worker that was killed while Ray held its lease) would
    otherwise hold the command for ever."""
    raw = os.environ.get("GRAPHLAKE_RAY_STALL_S")
    try:
        value = float(raw) if raw else STALL_S
    except ValueError:
        raise GraphlakeError(f"GRAPHLAKE_RAY_STALL_S must be seconds, not {raw!r}") from None
    if value <= 0:
        raise GraphlakeError(f"GRAPHLAKE_RAY_STALL_S must be above 0, not {raw!r}")
    return value


def stalled(what: str, waited_s: float) -> GraphlakeError:
    """The error for a cluster that answered nothing for ``waited_s`` seconds."""
    return GraphlakeError(
        f"the Ray cluster returned nothing for {waited_s:g} s while {what}; check its nodes "
        "(`ray status`), then run the same command again (what was committed is kept), or set "
        "GRAPHLAKE_RAY_STALL_S to wait longer"
    )
