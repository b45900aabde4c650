"""A typed Python client for ``graphlake serve`` (httpx)::

    from graphlake.client import Client
    with Client("http://127.0.0.1:8000", token=None) as gl:
        for inst in gl.iter_instances("kolab-1b", condition="graph-chat"):
            label = my_model(inst.prompt)
        gl.score("kolab-1b", [{"id": inst.id, "label": label}, ...])

Errors from the service raise :class:`ServiceError` with the status and the service's message.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from graphlake.server.models import Instance  # the service's own response model


class ServiceError(Exception):
    """The service answered with an error; ``status`` and ``code`` as it sent them."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


@dataclass(frozen=True)
class SqlResult:
    columns: list[str]
    rows: list[list[Any]]
    truncated: bool
    lake_version: int

    def records(self) -> list[dict]:
        return [dict(zip(self.columns, r, strict=True)) for r in self.rows]


class Client:
    def __init__(self, base_url: str, token: str | None = None, *, timeout: float = 60.0):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ plumbing
    def _request(self, method: str, path: str, **kw) -> httpx.Response:
        resp = self._http.request(method, path, **kw)
        if resp.status_code >= 400:
            try:
                err = resp.json()["error"]
                raise ServiceError(err["status"], err["code"], err["message"])
            except (ValueError, KeyError, TypeError):
                raise ServiceError(resp.status_code, "error", resp.text) from None
        return resp

    def get(self, path: str, **params) -> Any:
        return self._request(
            "GET", path, params={k: v for k, v in params.items() if v is not None}
        ).json()

    def pages(self, path: str, limit: int = 500, **params) -> Iterator[dict]:
        """Every item of a cursor-paginated list."""
        cursor = None
        while True:
            page = self.get(path, limit=limit, cursor=cursor, **params)
            yield from page["items"]
            cursor = page["next_cursor"]
            if cursor is None:
                return

    # ------------------------------------------------------------------ resources
    def health(self) -> dict:
        return self.get("/health")

    def corpora(self) -> list[dict]:
        return list(self.pages("/corpora"))

    def sessions(self, **filters) -> Iterator[dict]:
        return self.pages("/sessions", **filters)

    def graph(self, corpus: str, session_id: str, *, format: str = "json", **sel):
        resp = self._request(
            "GET",
            f"/sessions/{corpus}/{session_id}/graph",
            params={"format": format, **{k: v for k, v in sel.items() if v is not None}},
        )
        return resp.json() if format == "json" else resp.text

    def sql(self, sql: str, params: dict | None = None) -> SqlResult:
        body = self._request("POST", "/sql", json={"sql": sql, "params": params}).json()
        return SqlResult(body["columns"], body["rows"], body["truncated"], body["lake_version"])

    def sql_arrow(self, sql: str, params: dict | None = None):
        import pyarrow as pa

        resp = self._request(
            "POST",
            "/sql",
            json={"sql": sql, "params": params},
            headers={"Accept": "application/vnd.apache.arrow.stream"},
        )
        return pa.ipc.open_stream(resp.content).read_all()

    # ------------------------------------------------------------------ benchmarks
    def benchmarks(self) -> list[dict]:
        return self.get("/benchmarks")["items"]

    def instances(
        self,
        protocol: str,
        *,
        condition: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
        **params,
    ) -> tuple[list[Instance], str | None]:
        page = self.get(
            f"/benchmarks/{protocol}/instances",
            condition=condition,
            limit=limit,
            cursor=cursor,
            **params,
        )
        return [Instance.model_validate(i) for i in page["items"]], page["next_cursor"]

    def iter_instances(
        self, protocol: str, *, condition: str | None = None, page_size: int = 200, **params
    ) -> Iterator[Instance]:
        for item in self.pages(
            f"/benchmarks/{protocol}/instances", limit=page_size, condition=condition, **params
        ):
            yield Instance.model_validate(item)

    def instance(
        self, protocol: str, instance_id: str, *, condition: str | None = None, **params
    ) -> Instance:
        return Instance.model_validate(
            self.get(
                f"/benchmarks/{protocol}/instances/{instance_id}", condition=condition, **params
            )
        )

    def score(
        self,
        protocol: str,
        predictions: list[dict] | None = None,
        *,
        baseline: str | None = None,
        **params,
    ) -> dict:
        query = {k: v for k, v in {"baseline": baseline, **params}.items() if v is not None}
        return self._request(
            "POST",
            f"/benchmarks/{protocol}/score",
            params=query,
            json={"predictions": predictions or []},
        ).json()
