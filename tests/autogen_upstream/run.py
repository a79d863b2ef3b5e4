"""Run AutoGen 0.7.5's own tests against nbagent (issue 40.5): ``python -m tests.autogen_upstream.run``.

AutoGen's tests ship in its source distributions on the package index (``autogen-agentchat``,
``autogen-core``, ``autogen-ext`` 0.7.5: each has its ``tests/`` folder). The runner downloads them
with pip (``pip download --no-deps --no-binary :all:``, kept in ``~/.cache/nbagent/autogen-0.7.5``),
runs the listed files of each folder, mode and key in one pytest process (:func:`run_files`) with the plugin
``shim.py`` beside this file (nbagent's names in AutoGen's modules) and prints the counts per file; ``--json
PATH`` writes them with each failing test's id. What still fails is listed in docs/contract.md with its reason.

``NBAGENT_AUTOGEN_REPO`` (a git copy of AutoGen's repository) lets the runner build ``autogen-test-utils``,
which ``test_component_config.py`` imports and which is in that repository only; without it that file
is reported as one that cannot run here, as the MCP adapters' file always is (:data:`CANNOT_RUN`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path

VERSION = "0.7.5"
CACHE = Path.home() / ".cache" / "nbagent" / f"autogen-{VERSION}"
ROOT = Path(__file__).resolve().parents[2]

FILES: dict[str, tuple[str, str]] = {
    # AutoGen's AssistantAgent tests: every AutoGen name nbagent has is nbagent's
    "autogen-agentchat/test_assistant_agent.py": ("autogen_agentchat", "all"),
    # the parts
    "autogen-agentchat/test_messages.py": ("autogen_agentchat", "all"),
    "autogen-core/test_model_context.py": ("autogen_core", "all"),
    "autogen-core/test_tools.py": ("autogen_core", "all"),
    "autogen-core/test_workbench.py": ("autogen_core", "all"),
    "autogen-core/test_static_workbench_overrides.py": ("autogen_core", "all"),
    "autogen-core/test_memory.py": ("autogen_core", "all"),
    "autogen-core/test_component_config.py": ("autogen_core", "all"),
    "autogen-ext/models/test_reply_chat_completion_client.py": ("autogen_ext", "all"),
    "autogen-ext/models/test_openai_model_client.py": ("autogen_ext", "all"),
    "autogen-ext/tools/test_mcp_tools.py": ("autogen_ext", "all"),
    # AutoGen's teams with nbagent's agent standing in for AutoGen's, everything else AutoGen's
    "autogen-agentchat/test_group_chat.py": ("autogen_agentchat", "agent"),
    "autogen-agentchat/test_group_chat_graph.py": ("autogen_agentchat", "agent"),
    "autogen-agentchat/test_group_chat_nested.py": ("autogen_agentchat", "agent"),
    "autogen-agentchat/test_magentic_one_group_chat.py": ("autogen_agentchat", "agent"),
    "autogen-agentchat/test_society_of_mind_agent.py": ("autogen_agentchat", "agent"),
    "autogen-agentchat/test_task_runner_tool.py": ("autogen_agentchat", "agent"),
}
"""Each test file (package/path under its ``tests/``) with the shim's mode."""

NO_KEY = {"autogen-ext/models/test_openai_model_client.py"}
"""Files run without ``OPENAI_API_KEY``: their tests that call OpenAI's real API skip without one, as in a
checkout without AutoGen's secrets (with a placeholder key they would try the network, which is not
theirs to reach here); their other tests give their clients a key themselves."""


def sources() -> Path:
    """The three source distributions' folders, downloaded and unpacked once."""
    CACHE.mkdir(parents=True, exist_ok=True)
    for package in ("autogen-agentchat", "autogen-core", "autogen-ext"):
        folder = CACHE / f"{package.replace('-', '_')}-{VERSION}"
        if folder.exists():
            continue
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
        subprocess.run([*command, f"{package}=={VERSION}", "-d", str(CACHE)], check=True, timeout=600)
        archive = CACHE / f"{package.replace('-', '_')}-{VERSION}.tar.gz"
        with tarfile.open(archive) as tar:
            tar.extractall(CACHE, filter="data")
    return CACHE


EXTRAS = ("anthropic", "docstring_parser", "ollama")
"""Packages AutoGen's test modules import at their top that nbagent's environment lacks: installed
with pip into ``CACHE/site`` (``--no-deps``), on the tests' path only."""


def extras() -> Path:
    """The folder of :data:`EXTRAS`, installed once."""
    site = CACHE / "site"
    missing = [name for name in EXTRAS if not (site / name).exists()]
    if missing:
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site)]
        subprocess.run([*command, *missing], check=True, timeout=600)
    return site


REPOSITORY_PACKAGES = {
    "autogen-core/test_component_config.py": ("autogen_test_utils", "python/packages/autogen-test-utils"),
}
"""Files whose tests import a package of AutoGen's repository that is not on the package index: ``(module,
folder in the repository)``. It is built from a git copy of AutoGen's repository at the tag
(``NBAGENT_AUTOGEN_REPO``: its git directory or a checkout) and installed with pip into ``CACHE/site``,
once; nothing of it is kept in nbagent's tree."""

REPOSITORY_TAG = f"python-v{VERSION}"


def repository_package(name: str) -> str | None:
    """Install the repository package ``name``'s tests need (:data:`REPOSITORY_PACKAGES`); the reason it
    cannot be (no ``NBAGENT_AUTOGEN_REPO``, no such tag), or ``None`` when it is there."""
    if name not in REPOSITORY_PACKAGES:
        return None
    module, folder = REPOSITORY_PACKAGES[name]
    site = CACHE / "site"
    if (site / module).exists():
        return None
    repository = os.environ.get("NBAGENT_AUTOGEN_REPO")
    if not repository:
        return f"{module} is in AutoGen's repository only: set NBAGENT_AUTOGEN_REPO to a git copy of it"
    git = ["git", "--git-dir", str(_git_dir(Path(repository)))]
    listed = subprocess.run(
        [*git, "ls-tree", "-r", "--name-only", REPOSITORY_TAG, "--", folder],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if listed.returncode != 0 or not listed.stdout.strip():
        return f"{folder} not found at {REPOSITORY_TAG} in {repository}: {listed.stderr.strip()[:200]}"
    source = CACHE / "repository" / REPOSITORY_TAG
    for path in listed.stdout.split():
        target = source / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shown = subprocess.run([*git, "show", f"{REPOSITORY_TAG}:{path}"], capture_output=True, timeout=120, check=True)
        target.write_bytes(shown.stdout)
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site)]
    subprocess.run([*command, str(source / folder)], check=True, timeout=600)
    return None


def _git_dir(repository: Path) -> Path:
    """A checkout's ``.git``, or the git directory itself."""
    return repository / ".git" if (repository / ".git").exists() else repository


CANNOT_RUN = {
    "autogen-ext/tools/test_mcp_tools.py": (
        "autogen-ext 0.7.5's MCP modules import mcp.shared.context.RequestContext, which the mcp SDK nbagent "
        "needs (2.x) no longer has; with a 1.x SDK they import but nbagent's MCP code cannot run (it needs 2.x), "
        "and one process holds one of the two: only a second environment would run them, and it would not "
        "test nbagent as installed"
    ),
}
"""Files that cannot run in nbagent's environment, with the reason (docs/contract.md, ``environment``)."""


def cannot_run(name: str) -> str | None:
    """Why file ``name`` cannot run here (installing what it needs first), ``None`` when it can."""
    return CANNOT_RUN.get(name) or repository_package(name)


def test_path(name: str) -> Path:
    package, _, rest = name.partition("/")
    return sources() / f"{package.replace('-', '_')}-{VERSION}" / "tests" / rest


def together(name: str) -> tuple[str, str, bool]:
    """What the files run in one pytest process share: their folder, the shim's mode and whether the
    process has ``OPENAI_API_KEY`` (:data:`NO_KEY`)."""
    return str(Path(name).parent), FILES[name][1], name in NO_KEY


def run_files(names: list[str], timeout: float) -> dict[str, dict[str, object]]:
    """Each file's counts (``passed``, ``failed``, ``errors``, ``skipped``) and failing ids, the files of
    ``names`` that can run here going through one pytest process for each folder, mode and key
    (:func:`together`); a file that cannot run here (:func:`cannot_run`) has ``cannot_run``, its reason."""
    results: dict[str, dict[str, object]] = {}
    groups: dict[tuple[str, str, bool], list[str]] = {}
    for name in names:
        reason = cannot_run(name)
        if reason is not None:
            results[name] = {"file": name, "mode": FILES[name][1], "cannot_run": reason}
        else:
            groups.setdefault(together(name), []).append(name)
    for group in groups.values():
        results.update(_run_together(group, timeout))
    return {name: results[name] for name in names}


OUTPUT_TAIL = 3000
"""How much of a pytest process's output a file's result keeps when the process timed out or crashed."""


def _run_together(names: list[str], timeout: float) -> dict[str, dict[str, object]]:
    """Run ``names`` (one folder, mode and key) in one pytest process; each file's counts. A process that
    passed ``timeout`` or wrote no report marks each file ``timeout`` or ``crashed``, with the tail of its
    output (and, after a timeout, what its report had counted if it wrote one before hanging on exit)."""
    first = names[0]
    mode, folder = FILES[first][1], test_path(first).parent
    stems = {test_path(name).stem: name for name in names}
    # one report per process: several checkouts share the cache, and may run the same files at once
    report = CACHE / "reports" / f"{first.replace('/', '__')}.{len(names)}.{os.getpid()}.xml"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.unlink(missing_ok=True)
    env = {
        **{key: value for key, value in os.environ.items() if key != "OPENAI_API_KEY" or first not in NO_KEY},
        "NBAGENT_SHIM": mode,
        # the shim by its module name: AutoGen's own tests are a package called ``tests`` too
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(Path(__file__).parent), str(extras())]),
    }
    command = [
        sys.executable, "-m", "pytest", *(str(test_path(name)) for name in names), "-q", "-p", "no:cacheprovider",
        "-p", "no:xdist", "-p", "shim", "--continue-on-collection-errors", f"--junitxml={report}",
        "-o", "asyncio_mode=auto", f"--rootdir={folder}", "--timeout=120",
    ]  # fmt: skip
    if first not in NO_KEY:  # AutoGen's CI runs its tests with a key set; no test here reaches a real server
        env["OPENAI_API_KEY"] = os.environ.get("OPENAI_API_KEY") or "sk-" + "not-a-real-key"
    results: dict[str, dict[str, object]] = {name: {"file": name, "mode": mode} for name in names}
    trouble: dict[str, object] = {}
    try:
        done = subprocess.run(command, env=env, cwd=folder, capture_output=True, timeout=timeout, check=False)
        if not report.exists():
            trouble = {"crashed": f"exit {done.returncode}, no report", "output": _tail(done.stdout, done.stderr)}
    except subprocess.TimeoutExpired as expired:
        trouble = {"timeout": True, "output": _tail(expired.stdout, expired.stderr)}
    for result in results.values():
        result.update(trouble, passed=0, failed=0, errors=0, skipped=0, failing=[])
    if report.exists():
        count_cases(ET.parse(report).getroot().iter("testcase"), stems, results)
        report.unlink()
    return results


def _tail(*outputs: bytes | str | None) -> str:
    """The end of each of a process's outputs (stdout, stderr), ``OUTPUT_TAIL`` characters in all."""
    texts = [out.decode(errors="replace") if isinstance(out, bytes) else out or "" for out in outputs]
    return "\n".join(text[-OUTPUT_TAIL // len(texts) :] for text in texts)


def count_cases(cases: Iterable[ET.Element], stems: dict[str, str], results: dict[str, dict[str, object]]) -> None:
    """Add each report case to its file's counts (:func:`file_of`); a case of no file (pytest's own internal
    error) is an error of every file, whatever its outcome: nothing is counted for a file it may not be of."""
    for case in cases:
        classname, name = case.get("classname", ""), case.get("name", "")
        owner = file_of(classname, name, stems)
        outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
        key = {"failure": "failed", "error": "errors"}.get(outcome, outcome) if owner is not None else "errors"
        failing = ""
        if key in ("failed", "errors"):
            found = next((child for child in case if child.tag in ("failure", "error")), None)
            message = found.get("message", "") if found is not None else f"{outcome}, of no file run"
            failing = f"{classname}::{name}: {message[:200]}"
        for result in [results[owner]] if owner is not None else list(results.values()):
            result[key] = int(result[key]) + 1  # type: ignore[call-overload]
            if failing:
                result["failing"].append(failing)  # type: ignore[union-attr]


def file_of(classname: str, name: str, stems: dict[str, str]) -> str | None:
    """The file of a report's test case: its module, the first part of its class name (``test_memory`` of
    ``test_memory.TestX``); a file that failed to collect is named by its case's name instead. None for a
    case of no file run."""
    module = classname.split(".", 1)[0] if classname else Path(name.replace(".", "/")).name
    return stems.get(module)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="files of FILES to run (default: all)")
    parser.add_argument("--json", type=Path, help="write the counts and failing tests here")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per pytest process")
    args = parser.parse_args()
    results = list(run_files(args.files or list(FILES), args.timeout).values())
    for result in results:
        if "cannot_run" in result:
            print(f"{result['file']:60} {result['mode']:5} cannot run here: {result['cannot_run']}", flush=True)
            continue
        total = sum(int(result.get(key, 0)) for key in ("passed", "failed", "errors"))  # type: ignore[call-overload]
        trouble = " (its process timed out)" if result.get("timeout") else ""
        trouble += f" (its process crashed: {result['crashed']})" if result.get("crashed") else ""
        print(
            f"{result['file']:60} {result['mode']:5} passed {result.get('passed', 0)} of {total}{trouble}", flush=True
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
