"""What the guest knows about servers: the loaded servers' metadata (from
Init and AddServers) and the names of every server the host knows. Also
the alias rules shared with the host."""

import copy
import keyword
import re
from typing import Any, TypedDict


class ToolMeta(TypedDict):
    name: str
    alias: str
    description: str
    # The parsed JSON Schema of the arguments; None when it did not parse.
    input_schema: Any


class ServerMeta(TypedDict):
    """A loaded server, as ``describe_server`` shows it (a plain dict)."""

    name: str
    alias: str
    description: str
    cwd: str | None
    tools: list[ToolMeta]


class DiscoveredMeta(TypedDict):
    name: str
    description: str


# name -> metadata, in load order.
servers: dict[str, ServerMeta] = {}
# Every server the host knows.
discovered: list[DiscoveredMeta] = []


def sanitize(value: object, default: str) -> str:
    """The reference bridge's alias rule: lowercase, non-identifier
    characters to ``_``, a leading digit prefixed with ``_``, keywords
    suffixed with ``_``."""
    cleaned = re.sub(r"[^0-9a-zA-Z_]+", "_", str(value).strip()).lower() or default
    if cleaned[0].isdigit():
        cleaned = f"_{cleaned}"
    if keyword.iskeyword(cleaned):
        cleaned = f"{cleaned}_"
    return cleaned


def is_alias(value: object) -> bool:
    return isinstance(value, str) and value.isidentifier() and not keyword.iskeyword(value)


def unique(base: str, used: set[str]) -> str:
    """``base``, or ``base_2``, ``base_3``... whichever ``used`` lacks; adds it."""
    candidate, n = base, 1
    while candidate in used:
        n += 1
        candidate = f"{base}_{n}"
    used.add(candidate)
    return candidate


def find_server(name: object) -> ServerMeta | None:
    """The metadata of a loaded server, by name or alias (case-insensitive)."""
    if name in servers:
        return servers[name]
    if isinstance(name, str):
        wanted = name.lower()
        for meta in servers.values():
            if wanted in (meta["name"].lower(), meta["alias"].lower()):
                return meta
    return None


def server_name(name: str) -> str:
    """The host's name for ``name`` (which may be an alias)."""
    meta = find_server(name)
    return meta["name"] if meta else name


def find_tool(meta: ServerMeta, tool: object) -> ToolMeta | None:
    """A tool of ``meta`` by name or alias (case-insensitive)."""
    if not isinstance(tool, str):
        return None
    for info in meta["tools"]:
        if tool in (info["name"], info["alias"]):
            return info
    wanted = tool.lower()
    for info in meta["tools"]:
        if wanted in (info["name"].lower(), info["alias"].lower()):
            return info
    return None


def tool_name(server: str, tool: str) -> str:
    """The server's name for ``tool`` (which may be an alias)."""
    meta = find_server(server)
    info = find_tool(meta, tool) if meta else None
    return info["name"] if info else tool


def public(meta: ServerMeta) -> ServerMeta:
    """A copy of a server's metadata that user code may change freely."""
    return copy.deepcopy(meta)
