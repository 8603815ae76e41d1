"""The sandbox's one error type for failed MCP calls."""

from typing import Any


class MCPError(RuntimeError):
    """An MCP call failed.

    ``kind`` says how: ``"tool_error"`` when the tool ran and reported an
    error (``result`` holds its raw result), otherwise the host's reason:
    ``"not_allowed"``, ``"not_found"``, ``"invalid_arguments"``,
    ``"server_error"``, ``"timeout"``, ``"budget_exceeded"``, ``"internal"``,
    ``"unspecified"``. ``server`` and ``tool`` name the call when known.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str = "unspecified",
        server: str | None = None,
        tool: str | None = None,
        result: Any = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.server = server
        self.tool = tool
        self.result = result
