"""A pytest plugin that makes AutoGen 0.7.5's own tests import nbagent's names (issue 40.5).

``NBAGENT_SHIM=agent``: only AutoGen's ``AssistantAgent`` is nbagent's (AutoGen's teams, tools and
messages stay AutoGen's: nbagent's agent standing in for AutoGen's). ``NBAGENT_SHIM=all``: every
AutoGen name nbagent has a counterpart of is nbagent's: the component classes nbagent loads under
AutoGen's provider names (``component_aliases``), and the messages, model types and tokens of the
same name that ``nbagent`` exports.

The plugin sets the names on AutoGen's modules before the tests are collected, so a test's
``from autogen_core.models import UserMessage`` gets nbagent's. Nothing of AutoGen is copied here.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from typing import Annotated, Any, get_origin

import nbagent
from nbagent.autogen.loaders import SharedComponentModel
from nbagent.components import known_providers, provider_class

SHARED_MODULES = (
    "autogen_core",
    "autogen_core.models",
    "autogen_core.tools",
    "autogen_core.memory",
    "autogen_core.model_context",
    "autogen_agentchat.messages",
    "autogen_agentchat.base",
)
"""Modules whose public names are replaced by nbagent's of the same name in ``all`` mode."""


MIRRORS = {"autogen_ext.tools.mcp": "nbagent.mcp"}
"""AutoGen modules nbagent mirrors name for name: in ``all`` mode their public names are nbagent's; a
mirrored module that cannot be imported here (autogen-ext 0.7.5's MCP adapters need an older ``mcp``
SDK than the one installed) is stood in for by nbagent's, in either mode."""


def substitutions(mode: str) -> list[tuple[str, str, Any]]:
    """``(module, name, nbagent's object)`` for ``mode`` (``agent`` or ``all``)."""
    found: list[tuple[str, str, Any]] = [("autogen_agentchat.agents", "AssistantAgent", nbagent.AssistantAgent)]
    if mode == "agent":
        return found
    for provider in known_providers():
        module, _, name = provider.rpartition(".")
        if module.split(".")[0] in ("autogen_core", "autogen_agentchat", "autogen_ext"):
            found.append((module, name, provider_class(provider)))
    for module, mirror in MIRRORS.items():
        ours_module = importlib.import_module(mirror)
        found += [(module, name, getattr(ours_module, name)) for name in ours_module.__all__]
    # AutoGen's ComponentModel: the dump both libraries' configs take (nbagent.autogen.loaders)
    found.append(("autogen_core", "ComponentModel", SharedComponentModel))
    for module in SHARED_MODULES:
        loaded = importlib.import_module(module)
        for name in getattr(loaded, "__all__", ()):
            ours = getattr(nbagent, name, None)
            if name != "ComponentModel" and _same_kind(ours, getattr(loaded, name, None)):
                found.append((module, name, ours))
    return found


def _same_kind(ours: object, theirs: object) -> bool:
    """Both classes, or both pydantic field types (``Annotated``: the ``ChatMessage`` and ``AgentEvent`` unions)."""
    if isinstance(ours, type) and isinstance(theirs, type):
        return True
    return ours is not None and get_origin(ours) is Annotated and get_origin(theirs) is Annotated


def _module(name: str) -> types.ModuleType | None:
    """AutoGen's module ``name``; for a mirrored one that cannot be imported, nbagent's standing in."""
    try:
        return importlib.import_module(name)
    except ImportError:
        mirror = MIRRORS.get(name)
        if mirror is None:
            return None  # an extra this environment lacks: its tests fail to collect, as they would
        stand_in = types.ModuleType(name, f"nbagent's {mirror} standing in for {name}")
        sys.modules[name] = stand_in
        ours = importlib.import_module(mirror)
        for public in ours.__all__:
            setattr(stand_in, public, getattr(ours, public))
        return stand_in


def install(mode: str) -> list[str]:
    """Set the substitutions of ``mode`` on AutoGen's modules; the names set."""
    for name in MIRRORS:
        _module(name)
    done = []
    for module, name, ours in substitutions(mode):
        loaded = _module(module)
        if loaded is not None:
            setattr(loaded, name, ours)
            done.append(f"{module}.{name}")
    return done


def pytest_configure(config: Any) -> None:
    install(os.environ.get("NBAGENT_SHIM", "agent"))
