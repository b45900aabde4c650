"""Defer a package's ``__init__`` until a name defined there is asked for.

LanceDB imports ``lance_namespace_urllib3_client.models`` whether or not a REST namespace is
used, and importing any submodule first runs the package's generated ``__init__``, which
imports every API class of the REST client: 0.6-0.7 s of the 1.0-1.2 s ``import lancedb``
takes, a third of a cold ``graphlake search frames`` (the goal there is under 2 s).

:func:`defer` installs a finder that loads such a package as a bare module: its
``__path__`` is set, so ``from package.models import X`` imports just that submodule; the
first lookup of any other name (``from package import ApiClient``, ``package.__version__``)
runs the real ``__init__`` in the same module object, once, and answers from it. Nothing
is skipped, only postponed to the first use.

Like :mod:`graphlake.pandas_probe`, only the ``graphlake`` command's process installs it
(``graphlake.cli.main``): a notebook importing graphlake sees its packages load as usual.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import types

#: packages whose ``__init__`` only re-exports their submodules, and which graphlake's
#: command path reaches without needing those names
DEFERRED = ("lance_namespace_urllib3_client",)


class _DeferredInit(importlib.abc.Loader):
    """Creates the package bare; its module-level ``__getattr__`` runs the real ``__init__``."""

    def __init__(self, real: importlib.abc.Loader):
        self.real = real
        self._lock = threading.RLock()
        self._done = False

    def create_module(self, spec):
        return None  # the default module object

    def exec_module(self, module: types.ModuleType) -> None:
        loader = self

        def __getattr__(name: str):  # PEP 562: called only for names not yet defined
            if name.startswith("__") and name.endswith("__"):
                raise AttributeError(name)  # import machinery probing (__all__ included)
            loader._run_init(module)
            try:
                return module.__dict__[name]
            except KeyError:
                raise AttributeError(
                    f"module {module.__name__!r} has no attribute {name!r}"
                ) from None

        module.__dict__["__getattr__"] = __getattr__

    def _run_init(self, module: types.ModuleType) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
            del module.__dict__["__getattr__"]
            self.real.exec_module(module)


class _DeferFinder(importlib.abc.MetaPathFinder):
    def __init__(self, names: tuple[str, ...]):
        self.names = names

    def find_spec(self, name, path=None, target=None):
        if name not in self.names:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec  # not installed, or not a plain package: the usual import answers
        spec.loader = _DeferredInit(spec.loader)
        return spec


def defer(names: tuple[str, ...] = DEFERRED) -> None:
    """From here on, these packages (not yet imported) load with their ``__init__`` deferred."""
    todo = tuple(n for n in names if n not in sys.modules)
    if todo and not any(isinstance(f, _DeferFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _DeferFinder(todo))
