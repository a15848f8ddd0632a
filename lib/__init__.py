"""nexus: the shared library behind the skill gateway's tools."""

__version__ = "0.1.0"
