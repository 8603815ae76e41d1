"""Compiles a CPython standard library into the guest's frozen-module table.

Run by the interpreter that was just built (its bytecode and marshal format
are the ones the guest embeds):

    python freeze_stdlib.py LIB_DIR SYSCONFIGDATA_DIR OUT_DIR

writes OUT_DIR/stdlib.bin (the marshalled code objects, one after the
other) and OUT_DIR/stdlib.idx (one line per module:
``name<TAB>package|module<TAB>offset<TAB>size``), which guest/build.rs
embeds and guest/src/frozen.rs hands to CPython as PyImport_FrozenModules.
Tracebacks through these modules read ``<frozen NAME>``, as CPython's own
frozen modules do.
"""

import marshal
import os
import sys

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


def main() -> None:
    lib_dir, sysconfig_dir, out_dir = sys.argv[1:4]
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


if __name__ == "__main__":
    main()
