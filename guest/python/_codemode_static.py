"""What a fully static guest cannot do, made to fail with a clear message.

The default guest is one statically linked file: it has no dynamic loader,
so it cannot load a C extension module (a ``.so`` from a wheel) or a shared
library through ctypes. Loading one into a static glibc process would
corrupt it, so both are refused before ``dlopen`` is reached. Name-service
look-ups (``pwd``, ``grp`` beyond the image's own files, host names) have no
NSS modules to load either, and say so. Images built from wheels
(``codemode image build --variant ...`` or ``--requirements``) run the
dynamically linked guest, where all of this works.
"""

import sys
from typing import Any

HINT = (
    "codemode's default sandbox runs a fully static Python, which cannot load {what}; "
    "packages with C extensions need an image built from wheels "
    "(`codemode image build --requirements FILE --tag NAME`, or `--variant datascience`), "
    "selected with `--image NAME` or `--variant NAME`"
)


class StaticGuestError(ImportError):
    """An extension module the static guest cannot load."""


def _refuse_extensions() -> None:
    from importlib.machinery import (
        BYTECODE_SUFFIXES,
        EXTENSION_SUFFIXES,
        SOURCE_SUFFIXES,
        ExtensionFileLoader,
        FileFinder,
        SourceFileLoader,
        SourcelessFileLoader,
    )

    class RefusingExtensionLoader(ExtensionFileLoader):
        def create_module(self, spec: Any) -> Any:
            raise StaticGuestError(
                HINT.format(what=f"the C extension module {spec.name!r} ({self.path})"),
                name=spec.name,
                path=self.path,
            )

    hook = FileFinder.path_hook(
        (RefusingExtensionLoader, EXTENSION_SUFFIXES),
        (SourceFileLoader, SOURCE_SUFFIXES),
        (SourcelessFileLoader, BYTECODE_SUFFIXES),
    )
    sys.path_hooks[:] = [
        hook if getattr(h, "__name__", "") == "path_hook_for_FileFinder" else h for h in sys.path_hooks
    ]
    sys.path_importer_cache.clear()


def _refuse_dlopen() -> None:
    import _ctypes

    original: Any = _ctypes.dlopen

    def dlopen(name: Any, *args: Any) -> Any:
        # dlopen(NULL) is the program itself: ctypes needs it to import.
        if name is None:
            return original(name, *args)
        raise OSError(HINT.format(what=f"the shared library {name!r}"))

    _ctypes.dlopen = dlopen


def _explain_name_service() -> None:
    import grp
    import pwd

    def explained(module: Any, name: str) -> None:
        original = getattr(module, name)

        def lookup(key: Any) -> Any:
            try:
                return original(key)
            except KeyError as exc:
                raise KeyError(
                    f"{exc.args[0] if exc.args else key}: the static guest has no name-service modules, "
                    "so it knows users and groups only from the image's own /etc files, and by number"
                ) from None

        lookup.__doc__ = original.__doc__
        setattr(module, name, lookup)

    for module, names in ((pwd, ("getpwuid", "getpwnam")), (grp, ("getgrgid", "getgrnam"))):
        for name in names:
            explained(module, name)


def install() -> None:
    _refuse_extensions()
    _refuse_dlopen()
    _explain_name_service()
