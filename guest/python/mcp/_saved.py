"""Saved tools, kept by the host: ``save_tool(func)`` sends a function's
source to the host, which checks and stores it; ``load(name)`` (behind
``from mcp.saved import name``) fetches one and runs it in a fresh module
``mcp.saved.<name>``; ``list_saved_tools()`` names them.

A saved tool runs only in a session that imports it by name: nothing is
loaded at start-up. The requests block instead of awaiting, since an
``import`` cannot await."""

import ast
import inspect
import linecache
import sys
import textwrap
import tokenize
import types
from collections.abc import Callable
from typing import Any

import _codemode
from mcp import _rpc, _state
from mcp._errors import MCPError

PACKAGE = "mcp.saved"


def _filename(name: str) -> str:
    return f"<saved:{name}>"


def is_tool_name(name: str) -> bool:
    """Names the host accepts; others (``__all__``, ``__path__``...) are
    ordinary missing attributes of ``mcp.saved``."""
    return _state.is_alias(name) and not (name.startswith("__") and name.endswith("__"))


def save_tool(func: Callable[..., Any]) -> str:
    """Saves ``func`` (a function defined with ``def``) on the host. Any
    later session loads it with ``from mcp.saved import <name>``. Returns a
    confirmation; a name saved by another session is refused (MCPError)."""
    if not inspect.isfunction(func):
        raise ValueError(f"save_tool expects a function defined with def, not {type(func).__name__}")
    name = func.__name__
    if not is_tool_name(name):
        raise ValueError(f"save_tool needs a function with a name (def name(...)), not {name!r}")
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError, tokenize.TokenError) as exc:
        raise MCPError(f"the source of {name!r} is not available: {exc}", kind="invalid_arguments") from None
    if not source.endswith("\n"):
        source += "\n"
    # Source that does not compile is this cell's error: raise it here.
    compile(source, _filename(name), "exec", dont_inherit=True)
    answer = _rpc.request_blocking(lambda: _codemode.save_tool(name, source))
    _forget(name)
    verb = "replaced" if answer.get("replaced") else "saved"
    return f"Tool {name!r} {verb}. Load it in any session with: from mcp.saved import {name}"


def _forget(name: str) -> None:
    """Drops this session's loaded copy, so the next import gets the new one."""
    package = sys.modules.get(PACKAGE)
    if package is not None:
        package.__dict__.pop(name, None)
    sys.modules.pop(f"{PACKAGE}.{name}", None)


def load(name: str, namespace: dict[str, Any]) -> Callable[..., Any]:
    """The function saved as ``name``: its source, fetched from the host, is
    run in a fresh module ``mcp.saved.<name>``. Kept in ``namespace`` (the
    ``mcp.saved`` module's) so later imports reuse it."""
    if not is_tool_name(name):
        raise AttributeError(f"module {PACKAGE!r} has no attribute {name!r}")
    module_name = f"{PACKAGE}.{name}"
    try:
        source = _rpc.request_blocking(lambda: _codemode.load_saved_tool(name))["source"]
    except MCPError as exc:
        if exc.kind != "not_found":
            raise
        raise ImportError(
            f"no saved tool named {name!r}; mcp.runtime.list_saved_tools() lists them", name=module_name
        ) from None
    filename = _filename(name)
    # Tracebacks and inspect.getsource (so the tool can be saved again) read it here.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    code = compile(source, filename, "exec", dont_inherit=True)
    module = types.ModuleType(module_name, f"The saved tool {name!r}.")
    sys.modules[module_name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    func: object = module.__dict__.get(name)
    if not callable(func):
        sys.modules.pop(module_name, None)
        raise ImportError(f"the saved tool {name!r} does not define {name}()", name=module_name)
    namespace[name] = func
    return func


def list_saved_tools() -> list[dict[str, str]]:
    """The saved tools, as dicts with ``name`` and ``summary`` (the first
    line of the function's docstring). Nothing is run: docstrings are read
    with ``ast``. Load one with ``from mcp.saved import <name>``."""
    entries = _rpc.request_blocking(_codemode.list_saved_tools)
    return [{"name": entry["name"], "summary": _summary(entry["name"])} for entry in entries]


def _summary(name: str) -> str:
    try:
        source = _rpc.request_blocking(lambda: _codemode.load_saved_tool(name))["source"]
        tree = ast.parse(source, _filename(name))
    except (MCPError, SyntaxError, ValueError, RecursionError):
        # Removed meanwhile, or a hand-edited file that no longer parses.
        return ""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            doc = (ast.get_docstring(node) or "").strip()
            return doc.splitlines()[0] if doc else ""
    return ""
