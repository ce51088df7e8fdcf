"""Pydantic models of the four descriptor kinds; validation only, no I/O.

These models check what comes from files and the wire. Once a descriptor is valid, the
registry keeps its normalised ``model_dump`` (plain JSON data) in the cache, so the hot
paths (``show``, ``run``) never import pydantic; see ``toolctl.registry``. The kinds are in
``descriptors``, their runtime sections in ``tool_sections`` and ``service_sections``.
"""

from __future__ import annotations

from toolctl.models.descriptors import MODELS, Action, Group, Service, Tool, normalise

__all__ = ["MODELS", "Action", "Group", "Service", "Tool", "normalise"]
