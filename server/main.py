"""The app uvicorn imports for ``graphlake serve`` (settings from the environment the command
sets, so that every worker process opens the same lake with the same limits)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from graphlake.server.app import create_app
from graphlake.server.settings import Settings

app = create_app(Settings(lake=Path(os.environ["GRAPHLAKE_SERVE_LAKE"]),
                          **json.loads(os.environ.get("GRAPHLAKE_SERVE_CONFIG", "{}"))))
