"""nexus-mcp: the ready skills over the Model Context Protocol, every call through the gateway.

`command` is the tool's body and usage, `offer` what the server shows and returns (plain data),
`server` the MCP SDK's server around them, `clients` the snippets that register nexus with MCP
clients. Only `server` imports the SDK, and only `command` imports `server`, when it serves.
"""
