"""Serves the guest's embedded Python modules to the import system.

The sources are compiled into the guest binary (see guest/src/embedded.rs).
This finder makes them importable by name, and its ``get_source`` gives
tracebacks, ``inspect.getsource`` and ``help()`` their text.
"""

import marshal
import sys
import types
from collections.abc import Mapping, Sequence
from importlib.machinery import ModuleSpec

from _codemode import EmbeddedModule

PREFIX = "<codemode>/"


class EmbeddedFinder:
    """Finder and loader for the modules in ``table``."""

    def __init__(self, table: Mapping[str, EmbeddedModule]) -> None:
        self._table = dict(table)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> ModuleSpec | None:
        entry = self._table.get(fullname)
        if entry is None:
            return None
        # A loader by protocol: subclassing importlib.abc.Loader would cost
        # the import of importlib.abc (about 25 ms) at every start.
        spec = ModuleSpec(
            fullname,
            self,  # type: ignore[arg-type]
            origin=PREFIX + entry.path,
            is_package=entry.is_package,
        )
        spec.has_location = True
        return spec

    def create_module(self, spec: ModuleSpec) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        entry = self._table[module.__name__]
        # Compiled at build time (guest/build.rs) by this CPython's own build.
        exec(marshal.loads(entry.code), module.__dict__)

    def get_source(self, fullname: str) -> str | None:
        entry = self._table.get(fullname)
        return None if entry is None else entry.source

    def get_filename(self, fullname: str) -> str:
        return PREFIX + self._table[fullname].path

    def is_package(self, fullname: str) -> bool:
        return self._table[fullname].is_package


def install(table: Mapping[str, EmbeddedModule]) -> None:
    """Puts the embedded modules ahead of everything on sys.path, so a
    distribution's own ``mcp`` package cannot shadow the sandbox API."""
    sys.meta_path.insert(0, EmbeddedFinder(table))
