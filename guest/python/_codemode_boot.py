"""Serves the guest's embedded Python modules to the import system.

The sources are compiled into the guest binary (see guest/src/embedded.rs).
This finder makes them importable by name, and its ``get_source`` gives
tracebacks, ``inspect.getsource`` and ``help()`` their text.
"""

import sys
from importlib.machinery import ModuleSpec

PREFIX = "<codemode>/"


class EmbeddedFinder:
    """Finder and loader for the modules in ``table``."""

    def __init__(self, table):
        # name -> (path under guest/python, source text, is_package)
        self._table = table

    def find_spec(self, fullname, path=None, target=None):
        entry = self._table.get(fullname)
        if entry is None:
            return None
        spec = ModuleSpec(fullname, self, origin=PREFIX + entry[0], is_package=entry[2])
        spec.has_location = True
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        path, source, _ = self._table[module.__name__]
        code = compile(source, PREFIX + path, "exec", dont_inherit=True)
        exec(code, module.__dict__)

    def get_source(self, fullname):
        entry = self._table.get(fullname)
        return None if entry is None else entry[1]

    def get_filename(self, fullname):
        return PREFIX + self._table[fullname][0]

    def is_package(self, fullname):
        return self._table[fullname][2]


def install(table):
    """Puts the embedded modules ahead of everything on sys.path, so a
    distribution's own ``mcp`` package cannot shadow the sandbox API."""
    sys.meta_path.insert(0, EmbeddedFinder(dict(table)))
