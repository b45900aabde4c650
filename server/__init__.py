"""graphlake's HTTP service (``graphlake serve``): evaluation contexts, scoring, SQL and media
over one pinned lake connection. ``create_app(Settings(lake=...))`` builds the FastAPI app.

Nothing here knows a source format: every answer comes from the lake's canonical views and
the protocols in ``graphlake.protocols``. FastAPI loads on first use of ``create_app``, so the
client can share ``graphlake.server.models`` without it.
"""

from graphlake.server.settings import Settings

__all__ = ["Settings", "create_app"]


def __getattr__(name: str):
    if name == "create_app":
        from graphlake.server.app import create_app

        return create_app
    raise AttributeError(f"module 'graphlake.server' has no attribute {name!r}")
