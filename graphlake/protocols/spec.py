"""Benchmark protocols as declarative specs: what one instance is, its window and cut-off,
its label set and conditions, and the source that defines it.

A spec's ``hash`` covers everything that decides what an instance holds (the spec fields and
the prompt texts), so an instance records exactly which protocol definition cut it; two runs
scored against instances of different hashes are not comparable.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from functools import cached_property
from itertools import combinations

from graphlake.errors import GraphlakeError, NotFoundError

#: Kolab's seven input conditions, named as in the paper's tables.
KOLAB_CONDITIONS = tuple(
    "-".join(c) for r in (1, 2, 3) for c in combinations(("video", "graph", "chat"), r)
)


def needs_recording(condition: str) -> bool:
    """Whether ``condition`` shows the recording (Kolab's video, video-graph, ...): such a
    condition lists only the instances whose session has one."""
    return "video" in condition.split("-")


class ProtocolError(GraphlakeError, ValueError):
    """A protocol asked for with a condition, parameter or value it does not have."""


class UnknownProtocolError(ProtocolError, NotFoundError):
    """No benchmark protocol, or no instance of one, by that id."""


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # "int", "float", "str", "bool"
    default: object
    help: str
    choices: tuple = ()

    def parse(self, value):
        if value is None or value == "":
            return self.default
        try:
            if self.type == "int":
                out = int(value)
            elif self.type == "float":
                out = float(value)
            elif self.type == "bool":
                out = (
                    value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes")
                )
            else:
                out = str(value)
        except (TypeError, ValueError):
            raise ProtocolError(
                f"parameter {self.name} must be {self.type}, got {value!r}"
            ) from None
        if self.choices and out not in self.choices:
            raise ProtocolError(
                f"parameter {self.name} must be one of "
                f"{', '.join(map(str, self.choices))}; got {value!r}"
            )
        return out


@dataclass(frozen=True)
class ProtocolSpec:
    id: str
    description: str
    task: str  # adoption | rating | next_action | mental_model | outcome
    unit: str  # what one instance is
    window: str  # where the context starts and ends
    cutoff: str  # nothing that started at or after this enters a context
    labels: tuple[str, ...]
    conditions: tuple[str, ...]
    source: str  # the paper section that defines it
    params: tuple[Param, ...] = ()
    prompt_parts: tuple[str, ...] = field(default=(), repr=False, compare=False)

    @cached_property
    def param_names(self) -> frozenset[str]:
        return frozenset(p.name for p in self.params)

    @cached_property
    def hash(self) -> str:
        body = json.dumps(asdict(self), sort_keys=True, default=str)
        return hashlib.sha256(body.encode()).hexdigest()[:16]

    def bind(self, given: dict | None) -> dict:
        """Typed parameters with defaults; unknown names are an error that lists the known."""
        given = {k: v for k, v in (given or {}).items() if v is not None}
        known = {p.name: p for p in self.params}
        extra = sorted(set(given) - set(known))
        if extra:
            names = ", ".join(known) or "none"
            raise ProtocolError(
                f"{self.id} has no parameter {', '.join(extra)}; its parameters: {names}"
            )
        return {name: p.parse(given.get(name)) for name, p in known.items()}

    def check_condition(self, condition: str | None) -> str:
        condition = condition or self.conditions[0]
        if condition not in self.conditions:
            raise ProtocolError(
                f"{self.id} has no condition {condition!r}; choose one of "
                f"{', '.join(self.conditions)}"
            )
        return condition

    def summary(self) -> dict:
        return {
            "id": self.id,
            "description": self.description,
            "task": self.task,
            "unit": self.unit,
            "window": self.window,
            "cutoff": self.cutoff,
            "labels": list(self.labels),
            "conditions": list(self.conditions),
            "video_conditions": [c for c in self.conditions if needs_recording(c)],
            "source": self.source,
            "spec_hash": self.hash,
            "params": [
                {
                    "name": p.name,
                    "type": p.type,
                    "default": p.default,
                    "help": p.help,
                    "choices": list(p.choices),
                }
                for p in self.params
            ],
        }


def instance_id(protocol: str, corpus: str, session_id: str, target: str) -> str:
    """Deterministic instance id: the same lake rows give the same id in every run and in
    every condition (a prediction file scores whichever condition it was made in)."""
    key = "\x1f".join((protocol, corpus, session_id, target))
    return hashlib.sha256(key.encode()).hexdigest()[:20]
