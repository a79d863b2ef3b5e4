"""Every install hint names a package this project's own extras hold, never a name someone else owns.

``nbagent`` on the package registry is an unrelated project: the distribution is ``nbagent-loop``
(the import name stays ``nbagent``). A hint may name that distribution with one of its extras
(``pip install 'nbagent-loop[parquet]'``), the checkout itself (``pip install -e '.[lab]'``), a
requirements file, or a dependency one of the extras holds (``pip install pyarrow``).
"""

from __future__ import annotations

import ast
import functools
import json
import re
import shlex
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
DISTRIBUTION = PYPROJECT["project"]["name"]
EXTRAS: dict[str, list[str]] = PYPROJECT["project"]["optional-dependencies"]
HELD = {
    canonicalize_name(Requirement(spec).name)
    for spec in [*PYPROJECT["project"]["dependencies"], *(s for specs in EXTRAS.values() for s in specs)]
}

HINT = re.compile(r"pip3? install\b([^`\n&;|)]*)")
OPTIONS_WITH_VALUE = {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url"}


def hint_problems(text: str) -> list[str]:
    """What is wrong with each install hint in ``text`` (nothing for a good hint)."""
    problems: list[str] = []
    for match in HINT.finditer(text):
        try:
            words = shlex.split(match.group(1).split(" #")[0])
        except ValueError:  # an unbalanced quote: the hint ended inside a string of the source
            words = shlex.split(match.group(1).split(" #")[0].replace("'", " ").replace('"', " "))
        skip = False
        for word in words:
            if skip:
                skip = False
                continue
            if word in OPTIONS_WITH_VALUE:
                skip = True
                continue
            if word.startswith("-"):
                continue
            problems.extend(_word_problems(match.group(0), word))
    return problems


def _word_problems(hint: str, word: str) -> list[str]:
    word = word if word == "." else word.rstrip(".,:")  # the end of a sentence (not the project's folder)
    if word == "." or word.startswith(".["):
        extras = set(re.findall(r"[\w-]+", word[1:]))
        return [f"{hint!r}: extra {e!r} is not in pyproject" for e in extras - EXTRAS.keys()]
    try:
        requirement = Requirement(word)
    except InvalidRequirement:
        return [f"{hint!r}: {word!r} is no requirement"]
    name = canonicalize_name(requirement.name)
    if name == canonicalize_name(DISTRIBUTION):
        return [f"{hint!r}: extra {e!r} is not in pyproject" for e in requirement.extras - EXTRAS.keys()]
    if name not in HELD:
        return [f"{hint!r}: {requirement.name!r} is neither {DISTRIBUTION!r} nor a dependency its extras hold"]
    return []


@functools.cache
def texts() -> tuple[tuple[str, str], ...]:
    """(where, text) for every string of the sources, every cell and output of the notebooks, and the docs
    (read and parsed once for the tests that scan them)."""
    return tuple(_texts())


def _texts() -> Iterator[tuple[str, str]]:
    for path in sorted((ROOT / "src").rglob("*.py")) + sorted((ROOT / "bench").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield f"{path.relative_to(ROOT)}:{node.lineno}", node.value
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for index, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            where = f"{path.relative_to(ROOT)} cell {index}"
            yield where, "".join(cell["source"])
            for output in cell.get("outputs", []):
                yield where, json.dumps(output)
    docs = [ROOT / "README.md", ROOT / "SECURITY.md", ROOT / "binder" / "requirements.txt", ROOT / ".ci" / "run"]
    for path in docs + sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "bench").glob("*.md")):
        if path.is_file():
            yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")


def test_the_distribution_is_not_named_nbagent() -> None:
    assert DISTRIBUTION == "nbagent-loop"  # checked free on the registry (pip index versions) when chosen
    assert (ROOT / "src" / "nbagent" / "__init__.py").is_file()  # the import name stays nbagent


def test_every_install_hint_names_a_package_of_the_project() -> None:
    found = 0
    problems: list[str] = []
    for where, text in texts():
        found += len(HINT.findall(text))
        problems.extend(f"{where}: {problem}" for problem in hint_problems(text))
    assert not problems, "\n".join(problems)
    assert found >= 10  # the scan sees the hints (sources, notebooks 03 and 07, README, bench)


STRANGER_EXTRA = re.compile(r"(?<![\w.-])nbagent\[[\w,\s-]*\]")


def test_no_extra_is_written_on_the_strangers_name() -> None:
    """``nbagent[parquet]`` outside an install hint (a docstring, a doc) still names the other project."""
    found = [
        f"{where}: {match.group(0)}"
        for where, text in [*texts(), ("CHANGELOG.md", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))]
        for match in STRANGER_EXTRA.finditer(text)
        if not where.startswith("tests")
    ]
    assert not found, "\n".join(found)
    assert STRANGER_EXTRA.search("needs pyarrow (``nbagent[parquet]``)")
    assert not STRANGER_EXTRA.search("``nbagent-loop[parquet]``")


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("raise ImportError(\"needs pyarrow: pip install 'nbagent[parquet]'\")", "'nbagent'"),
        ("pip install 'nbagent-loop[nonsense]'", "'nonsense'"),
        ("`pip install some-stranger`", "'some-stranger'"),
        ('pip install -e ".[nope]"', "'nope'"),
    ],
)
def test_a_hint_naming_a_stranger_or_an_unknown_extra_is_caught(text: str, bad: str) -> None:
    problems = hint_problems(text)
    assert len(problems) == 1 and bad in problems[0], problems


@pytest.mark.parametrize(
    "text",
    [
        "pip install 'nbagent-loop[parquet]'",
        'install with `pip install "nbagent-loop[autogen]"`.',
        "pip install -e '.[lab]' && python -m nbagent lab",
        "(`pip install 'nbagent-loop[mcp]' mcp-server-time`),",
        "pip install pyarrow",
        "pip install -r binder/requirements.txt",
    ],
)
def test_good_hints_pass(text: str) -> None:
    assert hint_problems(text) == []
