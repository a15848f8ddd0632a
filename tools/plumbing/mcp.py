"""nexus-mcp: serve the ready skills to an agent over MCP, every call through the gateway.
"""

from nexus.catalog import scope
from nexus.cli.command import PROCESS, tool
from nexus.mcp import command as mcp

__doc__ += f"\n{mcp.DESCRIPTION}\n`nexus mcp` is the same command.\n\n{mcp.usage('nexus-mcp')}"

main = tool("nexus-mcp", PROCESS, __doc__, mcp.command, scope.take_option)
