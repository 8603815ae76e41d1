"""Helpers for MCP servers inside the sandbox.

Discovery: ``discovered_servers()``, ``list_servers()``/``list_servers_sync()``,
``describe_server(name)``, ``list_loaded_server_metadata()``,
``list_tools(server)``/``list_tools_sync(server)``.
Docs: ``query_tool_docs(server, tool=None, detail="summary")``,
``search_tool_docs(query, limit=5, detail="summary")`` and their ``_sync``
forms (``detail="full"`` adds input schemas).
Calls: ``await call_tool(server, tool, arguments)``; tool functions in
``mcp.servers.<alias>`` and ``mcp_<alias>`` wrap it. Failures raise ``MCPError``.
Saved tools: ``save_tool(func)`` keeps a function on the host,
``list_saved_tools()`` lists them, ``from mcp.saved import name`` loads one.
Processes: ``keep_processes()`` keeps what cells start running between cells.
Also ``show(image)`` and ``capability_summary()``.
The async helpers ask the host; the ``_sync`` ones answer from the metadata
this session already has, but ``search_tool_docs_sync``, which asks the host.
"""

import json
from typing import Any

import _codemode
from mcp import _docs, _rich, _rpc, _saved, _state
from mcp._errors import MCPError
from mcp._results import decode

__all__ = [
    "MCPError",
    "call_tool",
    "list_tools",
    "list_tools_sync",
    "list_servers",
    "list_servers_sync",
    "discovered_servers",
    "describe_server",
    "list_loaded_server_metadata",
    "query_tool_docs_sync",
    "query_tool_docs",
    "search_tool_docs_sync",
    "search_tool_docs",
    "capability_summary",
    "save_tool",
    "list_saved_tools",
    "show",
    "keep_processes",
]

save_tool = _saved.save_tool
list_saved_tools = _saved.list_saved_tools

_CAPABILITY_SUMMARY = """\
--- codemode sandbox ---
1. STATE: a persistent Python session. Variables and imports survive between runs;
   top-level `await` works; `asyncio.gather` runs tool calls concurrently.
2. DISCOVER: `runtime.discovered_servers()` lists servers (detailed=True for descriptions);
   `runtime.search_tool_docs("words")` ranks the tools of every server, loaded or not
   (a hit with "loaded": False says how to load it); `runtime.query_tool_docs(server)` lists
   a server's tools (detail="full" adds input schemas). Search before guessing names.
3. CALL: loaded servers are `mcp_<alias>` globals: `await mcp_<alias>.<tool>(arg=...)`.
   `help(mcp_<alias>.<tool>)` shows the parameters. Results come back decoded (dict/list/
   str); failures raise `runtime.MCPError` (`.kind` says why). `mcp_servers` maps names to
   servers; `from mcp.servers.<alias> import *` imports the tool functions.
   `await runtime.call_tool(server, tool, {...}, raw=True)` returns the raw MCP result.
4. SHOW: `runtime.show(png_bytes)` or `runtime.show(matplotlib_figure)` returns an image.
5. PERSIST: `save_tool(func)` keeps a function you defined; a later session loads it
   with `from mcp.saved import name` (never automatically). `runtime.list_saved_tools()`
   lists them with their docstrings' first lines.
6. PROCESSES: whatever a cell starts is ended when the cell ends; call
   `runtime.keep_processes()` first to keep processes (servers, pools) running between cells.
7. Working directories: `runtime.describe_server(name)["cwd"]` is a server's configured cwd.
"""


def _detail_is_full(detail: object) -> bool:
    return _docs.normalize_detail(detail) == "full"


async def call_tool(server: str, tool: str, arguments: dict[str, Any] | None = None, raw: bool = False) -> Any:
    """Calls ``tool`` of ``server`` (names or aliases) with ``arguments``
    (a dict). Returns the decoded result, or with ``raw=True`` the MCP
    CallToolResult as a dict."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise TypeError(f"arguments must be a dict, not {type(arguments).__name__}")
    name = _state.server_name(server)
    tool_name = _state.tool_name(name, tool)
    try:
        arguments_json = json.dumps(arguments, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"arguments for {tool_name!r} must be JSON-serializable: {exc}") from None
    result = await _rpc.request(
        lambda: _codemode.call_tool(name, tool_name, arguments_json), server=name, tool=tool_name
    )
    return result if raw else decode(result, name, tool_name)


async def list_tools(server: str) -> Any:
    """The tools of ``server`` as the host reports them: dicts with name,
    alias, description and inputSchema."""
    name = _state.server_name(server)
    return await _rpc.request(lambda: _codemode.list_tools(name), server=name)


async def list_servers() -> tuple[Any, ...]:
    """Names of the servers this session may use, asked from the host."""
    return tuple(await _rpc.request(_codemode.list_servers))


def list_servers_sync() -> tuple[str, ...]:
    """Names of the servers loaded in this session."""
    return tuple(_state.servers)


def discovered_servers(detailed: bool = False) -> tuple[str, ...] | tuple[_state.DiscoveredMeta, ...]:
    """Every server the host knows (loaded or not): names, or with
    ``detailed=True`` dicts with name and description."""
    if detailed:
        return tuple(entry.copy() for entry in _state.discovered)
    return tuple(entry["name"] for entry in _state.discovered)


def describe_server(name: str) -> _state.ServerMeta:
    """A loaded server's metadata: name, alias, description, cwd, tools."""
    return _state.public(_docs.require_server(name))


def list_loaded_server_metadata() -> tuple[_state.ServerMeta, ...]:
    return tuple(_state.public(meta) for meta in _state.servers.values())


def list_tools_sync(server: str | None = None) -> tuple[_state.ToolMeta, ...]:
    """The cached tool list of a loaded server."""
    if server is None:
        raise MCPError("list_tools_sync(server) requires a server name", kind="invalid_arguments")
    return tuple(_state.public(_docs.require_server(server))["tools"])


async def query_tool_docs(server: str, tool: str | None = None, detail: str = "summary") -> Any:
    """Docs of ``server``'s tools, asked from the host; with ``tool``, that
    tool's doc alone."""
    name = _state.server_name(server)
    tool_name = "" if tool is None else _state.tool_name(name, tool)
    full = _detail_is_full(detail)
    docs = await _rpc.request(
        lambda: _codemode.query_tool_docs(name, tool_name, full), server=name, tool=tool_name or None
    )
    if tool is not None and isinstance(docs, list) and len(docs) == 1:
        return docs[0]
    return docs


def query_tool_docs_sync(server: str, tool: str | None = None, detail: str = "summary") -> list[dict[str, Any]]:
    """Docs of a loaded server's tools from the cached metadata (a list)."""
    return _docs.query(server, tool, detail)


async def search_tool_docs(query: str, *, limit: int = 5, detail: str = "summary") -> Any:
    """The ``limit`` tools (1-20) that best match ``query`` (BM25 over tool
    names, descriptions and parameters), across every server this session
    may load, loaded or not: a list of docs, best first. ``loaded`` says
    whether the server is loaded here; when it is not, ``load`` says how
    (run_python's ``servers`` argument). ``detail="full"`` adds input
    schemas. Servers codemode never started are not indexed yet."""
    text, capped, full = str(query), _docs.clamp_limit(limit), _detail_is_full(detail)
    return await _rpc.request(lambda: _codemode.search_tool_docs(text, capped, full))


def search_tool_docs_sync(query: str, *, limit: int = 5, detail: str = "summary") -> Any:
    """``search_tool_docs`` without ``await`` (it blocks for the host's answer)."""
    text, capped, full = str(query), _docs.clamp_limit(limit), _detail_is_full(detail)
    return _rpc.request_blocking(lambda: _codemode.search_tool_docs_blocking(text, capped, full))


def capability_summary() -> str:
    """A short manual of this sandbox."""
    return _CAPABILITY_SUMMARY


def show(obj: Any, mime: str | None = None) -> None:
    """Returns an image with the cell's result: PNG/JPEG/GIF/SVG bytes, a
    matplotlib figure (or pyplot itself), or a PIL image."""
    mime_type, data = _rich.to_rich(obj, mime)
    _codemode.add_rich(mime_type, data)


def keep_processes(keep: bool = True) -> bool:
    """Whether processes this session's cells start keep running after the
    cell ends. Off by default: at the end of each cell, every process it
    left running is ended (SIGKILL). ``keep_processes()`` keeps them until
    the session ends; ``keep_processes(False)`` goes back to ending them.
    Returns the previous setting."""
    if not isinstance(keep, bool):
        raise TypeError(f"keep must be True or False, not {type(keep).__name__}")
    return _codemode.keep_processes(keep)
