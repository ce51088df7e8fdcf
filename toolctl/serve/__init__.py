"""Long-running front doors to the registry: the MCP server (stdio, streamable HTTP) and the
HTTP gateway (tool_agent's /health, /tools, /run_tool). Nothing here is imported on the
`toolctl run` path: the MCP SDK, Starlette and uvicorn load only when a server starts.
"""
