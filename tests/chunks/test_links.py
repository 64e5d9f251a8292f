"""Links as Obsidian resolves them: each row is a link written in a note and the file it must lead to."""

from __future__ import annotations

import pytest

from vaulteval.chunks.links import AmbiguousLink, LinkResolver, UnknownLink

PAGES = [
    "content/Concepts/adenosine.md",
    "content/Concepts/coffee nap.md",
    "content/Concepts/sleep/REM.md",
    "content/Concepts/sleep/Stages.md",
    "content/Other/Stages.md",
    "content/Index.md",
    "content/Notes/Index.md",
    "content/Notes/Reading list.md",
    "content/AAAAA/Bandwidth.md",
    "content/BBBBB/Bandwidth.md",
    "content/v1.2 release.md",
]
FILES = ["content/assets/x.png", "content/a/x.png", "content/Notes/x.png", "content/Concepts/diagram.svg",
         "content/assets/paper.pdf"]
NAP = "content/Concepts/coffee nap.md"
READING = "content/Notes/Reading list.md"

ROWS = [
    # (note the link is written in, link target as outgoing_links gives it, Markdown link?, path, status)
    (NAP, "./adenosine", False, "content/Concepts/adenosine.md", "resolved"),
    (NAP, "./adenosine.md", False, "content/Concepts/adenosine.md", "resolved"),
    (NAP, "adenosine", False, "content/Concepts/adenosine.md", "resolved"),
    (NAP, "ADENOSINE", False, "content/Concepts/adenosine.md", "resolved"),
    (NAP, "Concepts/adenosine", False, "content/Concepts/adenosine.md", "resolved"),
    (NAP, "/Concepts/adenosine.md", False, "content/Concepts/adenosine.md", "resolved"),
    (NAP, "content/Concepts/adenosine", False, "content/Concepts/adenosine.md", "resolved"),
    (NAP, "./sleep/REM", False, "content/Concepts/sleep/REM.md", "resolved"),
    (NAP, "sleep/REM", False, "content/Concepts/sleep/REM.md", "resolved"),
    (NAP, "../Index", False, "content/Index.md", "resolved"),
    (NAP, "../Notes/Reading list.md", False, READING, "resolved"),
    (NAP, "./missing", False, None, "unresolved"),
    (NAP, "../../../etc/passwd", False, None, "unresolved"),
    (NAP, "", False, NAP, "resolved"),
    (NAP, "v1.2 release", False, "content/v1.2 release.md", "resolved"),
    # several notes of one name: the linking note's folder first, then the shortest path; a tie is ambiguous
    (NAP, "Index", False, "content/Index.md", "resolved"),
    (READING, "Index", False, "content/Notes/Index.md", "resolved"),
    (NAP, "Stages", False, "content/Other/Stages.md", "resolved"),
    (NAP, "Bandwidth", False, None, "ambiguous"),
    (NAP, "AAAAA/Bandwidth", False, "content/AAAAA/Bandwidth.md", "resolved"),
    # files that are not notes (embeds of images, PDFs)
    (NAP, "../assets/x.png", False, "content/assets/x.png", "not-a-note"),
    (NAP, "x.png", False, "content/a/x.png", "not-a-note"),
    (READING, "x.png", False, "content/Notes/x.png", "not-a-note"),
    (NAP, "diagram.svg", False, "content/Concepts/diagram.svg", "not-a-note"),
    (NAP, "assets/paper.pdf", False, "content/assets/paper.pdf", "not-a-note"),
    (NAP, "./x.png", False, None, "unresolved"),
    (NAP, "missing.png", False, None, "unresolved"),
    # Markdown links: relative to the note first
    (NAP, "adenosine.md", True, "content/Concepts/adenosine.md", "resolved"),
    (NAP, "sleep/REM.md", True, "content/Concepts/sleep/REM.md", "resolved"),
    (NAP, "../Index.md", True, "content/Index.md", "resolved"),
    (NAP, "../assets/paper.pdf", True, "content/assets/paper.pdf", "not-a-note"),
]


@pytest.fixture(scope="module")
def resolver() -> LinkResolver:
    return LinkResolver(PAGES, notes_rel="content", list_files=lambda: FILES)


@pytest.mark.parametrize("source, target, markdown, path, status", ROWS)
def test_link_resolves_to(resolver: LinkResolver, source: str, target: str, markdown: bool, path: str | None,
                          status: str) -> None:
    assert resolver.link_status(source, target, markdown=markdown) == (path, status)


def test_a_key_without_a_note_around_it_stays_strict(resolver: LinkResolver) -> None:
    assert resolver.resolve("[[Concepts/adenosine]]") == "content/Concepts/adenosine.md"
    assert resolver.resolve("[[Index]]") == "content/Index.md"  # the path from the notes folder
    with pytest.raises(AmbiguousLink):
        resolver.resolve("[[Bandwidth]]")  # a judgment key must name one note
    with pytest.raises(UnknownLink):
        resolver.resolve("[[./adenosine]]")  # relative to nothing


def test_files_are_listed_only_when_a_link_needs_them() -> None:
    calls = []
    resolver = LinkResolver(PAGES, notes_rel="content", list_files=lambda: calls.append(1) or FILES)
    resolver.link_status(NAP, "./adenosine")
    assert calls == []
    resolver.link_status(NAP, "x.png")
    resolver.link_status(NAP, "paper.pdf")
    assert calls == [1]
