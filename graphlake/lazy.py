"""Package attributes that resolve on first use (PEP 562).

A package's ``__init__`` that imports its submodules makes every import of any of them pay
for all: ``graphlake.lake.current`` (what a cold ``graphlake sql`` reads) would load the writer,
pyarrow and deltalake. Packages re-export their names through :func:`attributes` instead.
"""

from __future__ import annotations

from importlib import import_module


def attributes(package: str, namespace: dict, where: dict[str, str]):
    """A module ``__getattr__`` for ``package``: name -> the submodule (relative to the
    package) that defines it, imported when the name is first read and kept in
    ``namespace`` (the package's globals) after."""

    def __getattr__(name: str):
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{module}"), name)
        namespace[name] = value  # resolved once
        return value

    return __getattr__
