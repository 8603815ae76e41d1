"""Compiles a CPython standard library into the guest's frozen-module table.

Run by the interpreter that was just built (its bytecode and marshal format
are the ones the guest embeds):

    python freeze_stdlib.py LIB_DIR SYSCONFIGDATA_DIR OUT_DIR [ZONEINFO_DIR]

writes OUT_DIR/stdlib.bin (the marshalled code objects, one after the
other) and OUT_DIR/stdlib.idx (one line per module:
``name<TAB>package|module<TAB>offset<TAB>size``), which guest/build.rs
embeds and guest/src/frozen.rs hands to CPython as PyImport_FrozenModules.
Tracebacks through these modules read ``<frozen NAME>``, as CPython's own
frozen modules do.

It also writes OUT_DIR/tzdata.zip: the time-zone database of ZONEINFO_DIR
(default /usr/share/zoneinfo) laid out as PyPI's ``tzdata`` package, which
``zoneinfo`` falls back to when the system has no database (no sandbox
does). The guest puts it on ``sys.path`` (zipimport reads its resources).
"""

import io
import marshal
import os
import sys
import zipfile

# Packages and modules a sandbox cannot use (no display, no terminal, no
# pip, no interpreter executable) or that only test CPython itself.
EXCLUDED = {
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "turtle",
    "ensurepip",
    "venv",
    "curses",
    "__phello__",
    "__hello__",
    "antigravity",
    "lib2to3",
    "site-packages",
    "__pycache__",
}


def modules(lib_dir: str):
    """(dotted name, is package, path) of every module under lib_dir."""
    for root, dirs, files in os.walk(lib_dir):
        rel = os.path.relpath(root, lib_dir)
        parts = [] if rel == "." else rel.split(os.sep)
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in EXCLUDED
            and d not in ("tests", "test", "idle_test")
            and os.path.isfile(os.path.join(root, d, "__init__.py"))
        )
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            stem = name[:-3]
            if not parts and stem in EXCLUDED:
                continue
            if stem == "__init__":
                if parts:
                    yield ".".join(parts), True, os.path.join(root, name)
            else:
                yield ".".join(parts + [stem]), False, os.path.join(root, name)


def tzdata_zip(zoneinfo_dir: str) -> bytes:
    """The zones under zoneinfo_dir (TZif files only; not the leap-second
    ``right/`` copy) as the ``tzdata`` package: an ``__init__.py`` in every
    directory, ``zones`` listing every key."""
    version = "unknown"
    zi = os.path.join(zoneinfo_dir, "tzdata.zi")
    if os.path.isfile(zi):
        with open(zi, encoding="ascii", errors="replace") as f:
            first = f.readline().split()
            version = first[-1] if first else version
    keys = []
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("tzdata/__init__.py", f'IANA_VERSION = "{version}"\n')
        packages = {"tzdata/zoneinfo"}
        for root, dirs, files in os.walk(zoneinfo_dir):
            rel = os.path.relpath(root, zoneinfo_dir)
            dirs[:] = sorted(d for d in dirs if not (rel == "." and d in ("right", "posix")))
            for name in sorted(files):
                path = os.path.join(root, name)
                with open(path, "rb") as f:
                    data = f.read()
                if not data.startswith(b"TZif"):
                    continue
                key = name if rel == "." else f"{rel}/{name}"
                keys.append(key)
                parts = key.split("/")[:-1]
                for depth in range(len(parts) + 1):
                    packages.add("/".join(["tzdata/zoneinfo", *parts[:depth]]))
                archive.writestr(f"tzdata/zoneinfo/{key}", data)
        for package in sorted(packages):
            archive.writestr(f"{package}/__init__.py", "")
        archive.writestr("tzdata/zones", "\n".join(sorted(keys)) + "\n")
    print(f"packed {len(keys)} time zones ({version})", file=sys.stderr)
    return buffer.getvalue()


def main() -> None:
    lib_dir, sysconfig_dir, out_dir = sys.argv[1:4]
    zoneinfo_dir = sys.argv[4] if len(sys.argv) > 4 else "/usr/share/zoneinfo"
    found = list(modules(lib_dir))
    names = {name for name, _, _ in found}
    for name in sorted(os.listdir(sysconfig_dir)):
        if name.startswith("_sysconfigdata_") and name.endswith(".py") and name[:-3] not in names:
            found.append((name[:-3], False, os.path.join(sysconfig_dir, name)))
    os.makedirs(out_dir, exist_ok=True)
    offset = 0
    with open(os.path.join(out_dir, "stdlib.bin"), "wb") as blob, open(
        os.path.join(out_dir, "stdlib.idx"), "w", encoding="ascii"
    ) as index:
        for name, is_package, path in found:
            with open(path, "rb") as source:
                code = compile(source.read(), f"<frozen {name}>", "exec", dont_inherit=True, optimize=0)
            data = marshal.dumps(code)
            blob.write(data)
            kind = "package" if is_package else "module"
            index.write(f"{name}\t{kind}\t{offset}\t{len(data)}\n")
            offset += len(data)
    print(f"froze {len(found)} modules, {offset} bytes", file=sys.stderr)
    with open(os.path.join(out_dir, "tzdata.zip"), "wb") as out:
        out.write(tzdata_zip(zoneinfo_dir) if os.path.isdir(zoneinfo_dir) else b"")


if __name__ == "__main__":
    main()
