"""One module per loaded MCP server: ``from mcp.servers.<alias> import *``
brings its tool functions. Filled in when the host's Init (or a later
AddServers) arrives."""

__all__: list[str] = []
