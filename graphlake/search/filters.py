"""Search filters, turned into LanceDB predicates applied before the vector search.

The workflow state of every frame (step, who was acting, whether an AI episode was open) is
stored with it at index time, so each filter is a plain column predicate: LanceDB evaluates
it first and searches only the rows that pass, and a filtered query still returns ``k`` hits
when ``k`` rows pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphlake.errors import GraphlakeError
from graphlake.vision.store import sql_str

ACTORS = ("human", "ai")


@dataclass(frozen=True)
class SearchFilters:
    corpus: str | None = None
    session: str | None = None
    t0: float | None = None  # seconds from session start, inclusive
    t1: float | None = None  # exclusive
    step: str | None = None
    actor: str | None = None  # human or ai: a node of that actor type was running
    during_ai: bool = False  # inside an AI episode: from the prompt to the human's response

    def __post_init__(self):
        if self.actor is not None and self.actor not in ACTORS:
            raise GraphlakeError(f"--actor must be human or ai, not {self.actor!r}")
        if self.t0 is not None and self.t1 is not None and self.t1 <= self.t0:
            raise GraphlakeError(f"--t1 ({self.t1:g}) must be after --t0 ({self.t0:g})")

    def where(self, table: str = "frames") -> str | None:
        parts = []
        if self.corpus:
            parts.append(f"corpus = {sql_str(self.corpus)}")
        if self.session:
            parts.append(f"session_id = {sql_str(self.session)}")
        if self.t0 is not None:
            parts.append(f"t >= {float(self.t0)!r}")
        if self.t1 is not None:
            parts.append(f"t < {float(self.t1)!r}")
        if self.step:
            parts.append(f"step_id = {sql_str(self.step)}")
        if table == "frames":
            if self.actor:
                parts.append(f"{self.actor}_active")
            if self.during_ai:
                parts.append("ai_episode")
        else:
            if self.actor:
                parts.append(f"actor_type = {sql_str(self.actor)}")
            if self.during_ai:
                raise GraphlakeError("--during-ai applies to frame search only")
        return " AND ".join(parts) or None
