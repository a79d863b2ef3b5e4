"""The tests of nbagent.autogen run against AutoGen itself (the test extra installs autogen-agentchat
and autogen-ext 0.7.x); without them there is nothing to test here."""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("autogen_agentchat") is None or importlib.util.find_spec("autogen_ext") is None:
    collect_ignore_glob = ["test_*.py"]
