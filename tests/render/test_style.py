"""One stylesheet: colours are --nba-* custom properties over JupyterLab's theme, written once."""

from __future__ import annotations

import re
from pathlib import Path

from nbagent.render import MIXES, PALETTE, STYLESHEET, fallback

SRC = Path(__file__).resolve().parents[2] / "src" / "nbagent"
COLOUR = re.compile(r"#[0-9a-fA-F]{3,8}\b|rgba?\(")


def test_every_colour_property_used_is_defined_and_follows_jupyterlab() -> None:
    used = set(re.findall(r"var\(--nba-([\w-]+)[,)]", STYLESHEET))
    assert used and used <= set(PALETTE) | set(MIXES) | {"state"}
    for name, (variable, light) in PALETTE.items():
        expected = f"--nba-{name}:var({variable},{light})" if variable else f"--nba-{name}:{light}"
        assert expected in STYLESHEET
    for name, (first, second, percent) in MIXES.items():
        assert f"--nba-{name}:color-mix(in srgb,var(--nba-{first}) {percent}%,var(--nba-{second}))" in STYLESHEET
    assert fallback("fg") == PALETTE["fg"][1]
    assert "--nba-fg:var(--jp-ui-font-color1," in STYLESHEET


def test_mixed_colours_have_a_light_fallback_between_their_two() -> None:
    # muted: 72 % of the text colour (#1f2328) in the page's (#ffffff)
    assert fallback("muted") == "#5e6164"


def test_every_state_has_a_colour() -> None:
    for state in ("idle", "running", "ok", "error", "cancelled", "interrupted"):
        assert f".nba-state-{state},[data-status={state}]{{--nba-state:var(--nba-" in STYLESHEET


def test_rules_write_no_colour_literal() -> None:
    rules = STYLESHEET.split("}", 1)[1]  # after the custom properties
    assert COLOUR.findall(rules) == []


def test_views_write_no_colour_literal() -> None:
    files = [*(SRC / "notebook").glob("*.py"), SRC / "trace" / "timeline.py", SRC / "trace" / "views.py"]
    files += [path for path in (SRC / "render").glob("*.py") if path.name != "style.py"]
    found = {path.name: COLOUR.findall(path.read_text()) for path in files}
    assert {name: hits for name, hits in found.items() if hits} == {}
