"""graphlake's HTTP service (``graphlake serve``): evaluation contexts, scoring, SQL and media
over one pinned lake connection. ``create_app(Settings(lake=...))`` builds the FastAPI app.

Nothing here knows a source format: every answer comes from the lake's canonical views and
the protocols in ``graphlake.protocols``.
"""

from graphlake.server.app import create_app
from graphlake.server.settings import Settings

__all__ = ["Settings", "create_app"]
