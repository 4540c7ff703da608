"""The README's option table is generated from the options themselves (issue 28 (6)): `pytest --help` and the
README cannot say different things. Regenerate it with
``python -c "from pytest_dws.inputs.settings import options_table; print(options_table())"``."""

from __future__ import annotations

import re

import pytest

from pytest_dws.inputs.settings import OPTIONS, options_table
from tests.conftest import REPO


def test_the_readme_option_table_is_the_generated_one() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- options:[^\n]*-->\n(.*?)<!-- /options -->", readme, re.S)
    assert block is not None, "README.md lost its <!-- options --> block"
    assert block.group(1) == options_table()


def test_every_option_of_pytest_help_is_in_the_table(pytester: pytest.Pytester) -> None:
    shown = pytester.runpytest("--help").stdout.str()
    for opt, ini, _ in OPTIONS:
        assert opt in shown and ini in shown, opt
        assert f"`{opt}` (`{ini}`)" in options_table()


# Issue 46 (5): the README says what the suite is, the two commands and the three things one can judge, and sends a
# reader to one page per task; it stays short enough to be read to the end.
TASK_PAGES = {
    "gate a release in CI": "docs/ci-upstream.md",
    "start the next release's folder": "docs/release-folder.md",
    "accept a known deviation": "docs/baseline.md",
    "replay a recording": "docs/replay.md",
    "evaluate an agent": "docs/evaluation.md",
}
README_MAX_LINES = 120
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def _links(text: str) -> list[str]:
    """Every relative target of a Markdown link or image, outside code blocks (a code sample may show any path)."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    found = [a or b for a, b in _LINK.findall(prose)]
    return [t for t in found if not re.match(r"[a-z]+:", t)]


def _anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", text, flags=re.S), re.M)}


def test_the_readme_is_short_and_links_one_page_per_task() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MAX_LINES
    linked = set(_links(readme))
    for task, page in TASK_PAGES.items():
        assert page in linked, task
        assert (REPO / page).is_file(), page
    if (REPO / "docs" / "safety.md").is_file():
        assert "docs/safety.md" in linked


@pytest.mark.parametrize("page", ["README.md", *sorted(p.relative_to(REPO).as_posix()
                                                      for p in (REPO / "docs").glob("*.md"))])
def test_every_link_of_the_docs_resolves(page: str) -> None:
    path = REPO / page
    text = path.read_text(encoding="utf-8")
    for target in _links(text):
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        assert dest.exists(), (page, target)
        if anchor and dest.suffix == ".md":
            assert anchor in _anchors(dest.read_text(encoding="utf-8")), (page, target)
