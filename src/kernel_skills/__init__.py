"""kernel-skills: install agent skills into coding-agent directories."""

__version__ = "0.1.0"
