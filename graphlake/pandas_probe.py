"""Spare the ``graphlake`` command pyarrow's import of pandas (0.2-0.3 s of a cold command).

pyarrow converts a Python list by first asking whether it is a pandas object, and to ask,
it imports pandas: the first ``pa.array([...])``, ``Table.from_pylist`` or ``to_pylist`` of
a process costs the whole pandas import, although graphlake never hands pyarrow a pandas
object (``graphlake bench list`` spent a quarter of its second there).

pyarrow asks once and keeps the answer. :func:`answer_without_pandas` makes it ask while
``import pandas`` fails, then lets pandas import again: list conversions no longer look for
pandas types, and whatever really needs pandas (``Table.to_pandas``, a library that imports
it) imports it as usual, since pyarrow tries the import again where pandas is required.

The one thing that changes is a pandas object handed to ``pa.array``: it converts element by
element, as any sequence. So only the ``graphlake`` command's process does this
(:func:`install`, from ``graphlake.cli.main``; ``graphlake serve`` included), where no
pandas object reaches pyarrow: graphlake hands pyarrow, DuckDB, Delta and LanceDB Arrow data
only. The library imported in a notebook or another program is left as it is.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys


def answer_without_pandas() -> bool:
    """Have pyarrow record "no pandas" for its type checks; whether it did (False when pandas
    is already imported: then there is nothing to spare)."""
    if "pandas" in sys.modules:
        return False
    import pyarrow as pa

    hidden = _NoPandas()
    sys.meta_path.insert(0, hidden)  # (a None in sys.modules would not do: Cython's import
    try:  # returns it as the module)
        pa.array([0])  # pyarrow's first list conversion: the question, asked now
    finally:
        sys.meta_path.remove(hidden)
    return True


class _NoPandas(importlib.abc.MetaPathFinder):
    """``import pandas`` fails while this finder is first on ``sys.meta_path``."""

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r} (hidden)", name=name)
        return None


class _AfterPyarrow(importlib.abc.MetaPathFinder):
    """Runs :func:`answer_without_pandas` as soon as pyarrow is imported, whichever command
    imports it (``graphlake --help`` imports none, and must not pay for pyarrow here)."""

    def find_spec(self, name, path=None, target=None):
        if name != "pyarrow":
            return None
        sys.meta_path.remove(self)  # once, and the real finders answer below
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            answer_without_pandas()

        spec.loader.exec_module = exec_module
        return spec


def install() -> None:
    """From here on, this process's pyarrow answers its pandas question without pandas."""
    if "pyarrow" in sys.modules:
        answer_without_pandas()
    elif not any(isinstance(f, _AfterPyarrow) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterPyarrow())
