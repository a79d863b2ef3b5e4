"""``python -m nbagent``: ``demo`` prints a scripted run and its DataFrames; ``lab`` opens the walkthrough;
``prune-widgets`` removes from saved notebooks the widget models their outputs no longer show.

Both work offline with no API key: ``demo`` runs on the replay model, ``lab`` starts JupyterLab on
``notebooks/02_walkthrough_steps_1_5.ipynb`` of a source checkout (it installs nothing), saving the
shipped notebooks it laid out without outputs (:func:`save_without_outputs`), so running them changes no
tracked file, and a user's own notebooks keep theirs. ``prune-widgets`` is for notebooks nbclient saved
(``jupyter nbconvert --execute``, papermill): :func:`nbagent.notebook.saved.prune_widget_state`.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any, TextIO

from .agent import AssistantAgent
from .demo import SCRIPTED_TASK, scripted_agent
from .messages import TextMessage
from .records import Move
from .render import memory_skipped_line, to_text

WALKTHROUGH = "02_walkthrough_steps_1_5.ipynb"
DESCRIPTION = (
    "nbagent: explore an LLM agent's tool-use loop. 'demo' prints a scripted run and its DataFrames in the "
    "terminal; 'lab' opens JupyterLab on the walkthrough notebook. Both work offline, with no API key."
)


def describe(item: object) -> str | None:
    """One terminal line for a run item (the renderer's text twin); ``None`` for items the demo does not print."""
    return to_text(item)


async def demo(out: TextIO | None = None) -> AssistantAgent:
    """Run the scripted task, printing each item as it happens, then the trace's DataFrames."""
    stream = out if out is not None else sys.stdout
    agent = scripted_agent()
    print(
        f"nbagent demo: offline, on the replay model (no network, no API key)\n\ntask: {SCRIPTED_TASK}\n", file=stream
    )
    async for item in agent.iter([TextMessage(content=SCRIPTED_TASK, source="user")]):
        if isinstance(item, Move) and item.name == "message_id" and not agent.memory:
            print(memory_skipped_line(), file=stream)
        line = describe(item)
        if line is not None:
            print(line, file=stream)
    print_frames(agent, stream)
    return agent


def print_frames(agent: AssistantAgent, out: TextIO) -> None:
    """The run's context, LLM calls and tool calls as tables, and the trace summary."""
    import pandas as pd

    trace = agent.trace
    tables = {
        "agent.context_df()": agent.context_df()[["kind", "source", "text", "step", "move"]],
        "agent.trace.llm_calls_df()": trace.llm_calls_df()[
            ["call_index", "purpose", "n_messages", "n_tools", "prompt_tokens", "completion_tokens", "finish_reason"]
        ],
        "agent.trace.tool_calls_df()": trace.tool_calls_df()[
            ["iteration", "tool_name", "arguments", "result", "is_error", "concurrent_with"]
        ],
        "agent.trace.summary()": trace.summary()[
            ["runs", "llm_calls", "prompt_tokens", "completion_tokens", "tool_calls", "tool_errors"]
        ],
    }
    with pd.option_context("display.width", 160, "display.max_colwidth", 60, "display.max_columns", 20):
        for title, table in tables.items():
            print(f"\n{title}\n{table.to_string()}", file=out)


def notebooks_dir() -> Path | None:
    """The ``notebooks/`` folder of the source checkout nbagent runs from, if there is one."""
    candidate = Path(__file__).resolve().parents[2] / "notebooks"
    return candidate if (candidate / WALKTHROUGH).is_file() else None


SAVE_HOOK = "nbagent.__main__.save_without_outputs"
AFTER_SAVE_HOOK = "nbagent.__main__.after_save"
MANIFEST_VARIABLE = "NBAGENT_LAB_SHIPPED"
"""The environment variable through which ``nbagent lab`` tells the server's save hooks which shipped
notebooks it serves: ``{"root": <folder>, "notebooks": {<name>: <sha256 of the file>}}``."""
SHIPPED = frozenset(
    {
        "01_quickstart.ipynb",
        "02_walkthrough_steps_1_5.ipynb",
        "02_walkthrough_steps_1_5.zh.ipynb",
        "03_tool_loop_lab.ipynb",
        "04_trace_analysis.ipynb",
        "05_live_models.ipynb",
        "06_batch_runs.ipynb",
        "07_autogen_teams.ipynb",
        "08_experiments.ipynb",
    }
)
"""The names of the notebooks the repository ships (tests/notebooks/test_main.py checks the list)."""
_RUN_METADATA = ("execution", "scrolled", "collapsed", "jupyter")  # what running and viewing add to a cell


def shipped_manifest(folder: Path) -> dict[str, Any]:
    """The shipped notebooks ``nbagent lab`` serves from ``folder``, by path and content: each file at
    the top of ``folder`` (not a symlink) named as a shipped notebook and, unless ``folder`` is the
    checkout's own notebooks folder, byte for byte the checkout's notebook of that name; with the
    SHA-256 of its bytes. A user's notebook of a shipped name, elsewhere or with other content, is not
    in it."""
    root = folder.resolve()
    checkout = notebooks_dir()
    checkout = checkout.resolve() if checkout is not None else None
    own = checkout == root
    notebooks: dict[str, str] = {}
    for name in sorted(SHIPPED):
        data = _regular_file_bytes(root / name)
        if data is None:
            continue
        if not own and (checkout is None or _regular_file_bytes(checkout / name) != data):
            continue
        notebooks[name] = hashlib.sha256(data).hexdigest()
    return {"root": str(root), "notebooks": notebooks}


def _regular_file_bytes(path: Path) -> bytes | None:
    """The bytes of ``path`` if it is a regular file reached through no symlink (``None`` otherwise)."""
    try:
        if path.is_symlink() or not path.is_file() or path.resolve() != path.absolute():
            return None
        return path.read_bytes()
    except OSError:
        return None


_manifests: dict[str, dict[str, Any]] = {}  # the server's copy of the manifest given, kept current by after_save
_stripping: set[str] = set()  # the shipped notebooks save_without_outputs stripped, not saved yet


def _shipped() -> dict[str, Any]:
    """The manifest ``nbagent lab`` gave (:data:`MANIFEST_VARIABLE`); none, or a broken one: nothing shipped."""
    source = os.environ.get(MANIFEST_VARIABLE, "")
    if source not in _manifests:
        try:
            given = json.loads(source)
        except ValueError:
            given = None
        valid = isinstance(given, dict) and isinstance(given.get("notebooks"), dict) and "root" in given
        _manifests[source] = given if valid else {"root": None, "notebooks": {}}
    return _manifests[source]


def _shipped_target(path: str, contents_manager: Any) -> Path | None:
    """The file a save of ``path`` writes, if it is one of the shipped notebooks ``nbagent lab`` laid out,
    still holding the content it had then (or at its last save as shipped)."""
    manifest = _shipped()
    name = PurePosixPath(path.strip("/"))
    root = getattr(contents_manager, "root_dir", None)
    if len(name.parts) != 1 or name.name not in manifest["notebooks"] or root is None:
        return None
    if manifest["root"] is None or Path(root).resolve() != Path(str(manifest["root"])):
        return None
    target = Path(str(manifest["root"])) / name.name
    data = _regular_file_bytes(target)
    if data is None or hashlib.sha256(data).hexdigest() != manifest["notebooks"][name.name]:
        return None
    return target


def save_without_outputs(model: dict[str, Any], path: str, contents_manager: Any, **kwargs: Any) -> None:
    """JupyterLab's pre-save hook under ``nbagent lab``: the shipped notebooks are saved as the repository
    keeps them, so opening and running them leaves ``git status`` clean.

    Only the shipped notebooks ``nbagent lab`` laid out (:func:`shipped_manifest`: by path in the folder
    it serves and by content, never through a symlink) are saved without outputs, execution counts,
    widget state or the metadata running and viewing add (the notebook metadata stays what the file on
    disk holds); edits to their cells are saved. Any other notebook (a user's own, whatever its name
    or folder, one renamed to a shipped name, a symlink) is saved as it is.
    """
    content = model.get("content")
    if model.get("type") != "notebook" or not isinstance(content, dict):
        return
    target = _shipped_target(path, contents_manager)
    if target is None:
        return
    for cell in content.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
        for key in _RUN_METADATA:
            cell.get("metadata", {}).pop(key, None)
    kept = _metadata_on_disk(target)
    metadata = content.setdefault("metadata", {})
    metadata.pop("widgets", None)
    if kept is not None:
        content["metadata"] = kept
    _stripping.add(str(target))


def after_save(model: dict[str, Any], os_path: str, contents_manager: Any) -> None:
    """JupyterLab's post-save hook under ``nbagent lab``: a shipped notebook saved without outputs is
    known by its new content from now on (its cells' edits are the user's, still the shipped notebook)."""
    target = Path(os_path).parent.resolve() / Path(os_path).name
    if str(target) not in _stripping:
        return
    _stripping.discard(str(target))
    data = _regular_file_bytes(target)
    if data is not None:
        _shipped()["notebooks"][target.name] = hashlib.sha256(data).hexdigest()


def _metadata_on_disk(path: Path) -> dict[str, Any] | None:
    """The notebook metadata of the file as it is (before this save), without widget state."""
    try:
        metadata = json.loads(path.read_text(encoding="utf-8")).get("metadata")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(metadata, dict):
        return None
    metadata.pop("widgets", None)
    return metadata


def lab(directory: Path | None, port: int | None, no_browser: bool, jupyter_args: Sequence[str] = ()) -> int:
    """Replace this process with JupyterLab opened on the walkthrough (``jupyter_args`` passed on)."""
    folder = directory if directory is not None else notebooks_dir()
    if folder is None or not (folder / WALKTHROUGH).is_file():
        where = f" in --dir {directory}" if directory is not None else ""
        print(
            f"nbagent lab: {WALKTHROUGH} not found{where}; run it from a clone of the repository "
            "(pip install -e '.[lab]') or pass --dir <the notebooks folder of a clone>",
            file=sys.stderr,
        )
        return 2
    if importlib.util.find_spec("jupyterlab") is None:
        print(
            "nbagent lab: JupyterLab is not installed; install it with: pip install 'nbagent-loop[lab]'",
            file=sys.stderr,
        )
        return 2
    # default_url (not a file argument) makes the URL JupyterLab prints open the walkthrough itself.
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--ServerApp.root_dir={folder}",
        f"--LabApp.default_url=/lab/tree/{WALKTHROUGH}",
        f"--ContentsManager.pre_save_hook={SAVE_HOOK}",
        f"--ContentsManager.post_save_hook={AFTER_SAVE_HOOK}",
    ]
    if port is not None:
        command.append(f"--ServerApp.port={port}")
    if no_browser:
        command.append("--no-browser")
    command.extend(jupyter_args)
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in command:
        command.append("--allow-root")  # JupyterLab refuses root otherwise (containers, CI machines)
    environment = dict(os.environ, **{MANIFEST_VARIABLE: json.dumps(shipped_manifest(folder))})
    sys.stdout.flush()
    os.execve(sys.executable, command, environment)


def prune_widgets(paths: Sequence[Path], out: TextIO | None = None) -> int:
    """``nbagent prune-widgets``: prune each notebook's widget state, one line each; 1 if one could not be."""
    from .notebook.saved import prune_widget_state

    stream = out if out is not None else sys.stdout
    failed = False
    for path in paths:
        try:
            done = prune_widget_state(path)
        except (OSError, ValueError) as error:
            print(f"{path}: not pruned: {error}", file=sys.stderr)
            failed = True
            continue
        print(
            f"{path}: {done.removed} widget models removed, {done.kept} kept; {done.bytes_before:,} -> "
            f"{done.bytes_after:,} bytes",
            file=stream,
        )
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nbagent", description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="print a scripted run's events and its DataFrames (offline)")
    lab_parser = commands.add_parser("lab", help="open JupyterLab on the walkthrough notebook")
    lab_parser.add_argument("--dir", type=Path, default=None, help="the notebooks folder (default: the checkout's)")
    lab_parser.add_argument(
        "--port", type=int, default=None, help="the port JupyterLab listens on (default: 8888, or the next free one)"
    )
    lab_parser.add_argument(
        "--no-browser", action="store_true", help="do not open a browser; open the URL JupyterLab prints yourself"
    )
    lab_parser.add_argument(
        "jupyter_args", nargs=argparse.REMAINDER, help="after --: more options for JupyterLab (e.g. -- --allow-root)"
    )
    prune_parser = commands.add_parser(
        "prune-widgets",
        help="remove from saved notebooks the widget models no output shows (after nbconvert --execute, papermill)",
    )
    prune_parser.add_argument("notebooks", nargs="+", type=Path, help="the .ipynb files, each rewritten whole")
    args = parser.parse_args(argv)
    if args.command == "demo":
        asyncio.run(demo())
        return 0
    if args.command == "prune-widgets":
        return prune_widgets(args.notebooks)
    extra = args.jupyter_args[1:] if args.jupyter_args[:1] == ["--"] else args.jupyter_args
    return lab(args.dir, args.port, args.no_browser, extra)


if __name__ == "__main__":
    sys.exit(main())
