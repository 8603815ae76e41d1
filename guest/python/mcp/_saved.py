"""Saved tools: ``save_tool(func)`` writes a function's source to
``<tools_dir>/<name>.py``; every ``*.py`` there is loaded into the globals
at the start of a session's first cell. A file that fails to load is
reported on that cell's stderr, never silently skipped."""

import contextlib
import inspect
import os
import sys
import textwrap

from mcp import _state
from mcp._errors import MCPError

_HEADER = "# Saved with codemode's save_tool(); loaded into every new session.\n"


def _disabled(reason):
    return MCPError(f"saved tools are disabled: {reason}", kind="not_allowed")


def save_tool(func):
    """Saves ``func`` (a function defined with ``def`` in a cell) so that
    future sessions have it as a global. Returns a confirmation."""
    if not inspect.isfunction(func):
        raise ValueError(f"save_tool expects a function defined with def, not {type(func).__name__}")
    name = func.__name__
    if not _state.is_alias(name):
        raise ValueError(f"save_tool needs a function with a name (def name(...)), not {name!r}")
    directory = _state.tools_dir
    if not directory:
        raise _disabled("this session has no saved-tools directory")
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError) as exc:
        raise MCPError(f"the source of {name!r} is not available: {exc}", kind="invalid_arguments") from None
    if not source.endswith("\n"):
        source += "\n"
    import tempfile  # only saving needs it; keeps it off the start-up path

    path = os.path.join(directory, f"{name}.py")
    tmp = None
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(_HEADER + source)
        # mkstemp makes 0600; other backends may run the sandbox as another
        # host uid (podman's 65534 vs bubblewrap's mapped user), so let all read it.
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise _disabled(f"{directory} is not writable ({exc.strerror or exc})") from None
    return f"Tool {name!r} saved to {path}; it is loaded automatically in future sessions."


def load_all(namespace):
    """Runs every saved tool file into ``namespace``."""
    directory = _state.tools_dir
    if not directory or not os.path.isdir(directory):
        return
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".py") and not n.startswith("."))
    except OSError as exc:
        sys.stderr.write(f"codemode: cannot list saved tools in {directory}: {exc}\n")
        return
    for filename in names:
        path = os.path.join(directory, filename)
        try:
            with open(path, encoding="utf-8") as source_file:
                source = source_file.read()
            exec(compile(source, path, "exec", dont_inherit=True), namespace)
        except (Exception, SystemExit) as exc:  # any broken file is reported, the others still load
            sys.stderr.write(f"codemode: saved tool {path} failed to load: {type(exc).__name__}: {exc}\n")
