"""The sandbox's one error type for failed MCP calls."""


class MCPError(RuntimeError):
    """An MCP call failed.

    ``kind`` says how: ``"tool_error"`` when the tool ran and reported an
    error (``result`` holds its raw result), otherwise the host's reason:
    ``"not_allowed"``, ``"not_found"``, ``"invalid_arguments"``,
    ``"server_error"``, ``"timeout"``, ``"budget_exceeded"``, ``"internal"``,
    ``"unspecified"``. ``server`` and ``tool`` name the call when known.
    """

    def __init__(self, message, *, kind="unspecified", server=None, tool=None, result=None):
        super().__init__(message)
        self.kind = kind
        self.server = server
        self.tool = tool
        self.result = result
