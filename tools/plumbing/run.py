"""nexus-run: the gateway. Run a skill's tool or script, or print its prompt; log every call.
"""

from nexus.catalog import scope
from nexus.cli.command import PROCESS, tool
from nexus.gateway import run as gateway

__doc__ += f"\n{gateway.DESCRIPTION}`nexus skill run` is the same command.\n\n{gateway.usage('nexus-run')}"

main = tool("nexus-run", PROCESS, __doc__, gateway.command, scope.take_option)
