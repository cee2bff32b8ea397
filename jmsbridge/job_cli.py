"""Placeholder: this module's commands are registered here."""

from __future__ import annotations

from typing import Any


def register(commands: Any) -> None:
    """Add this module's subcommands to `commands` (an argparse subparsers action)."""
