#!/usr/bin/env python3
"""Checks the relative links of the project's Markdown documentation.

Usage: scripts/check-links.py [FILE.md ...]   (default: README.md and docs/*.md)

Every inline link or image `[text](target)` and reference definition `[label]: target` whose
target is not a URL (`http:`, `https:`, `mailto:`, ...) must resolve: the file or directory
must exist, relative to the Markdown file that links to it, and an `#anchor` (on another
Markdown file, or `#anchor` alone for the same file) must be the slug of one of that file's
headings as GitHub makes it (lower case; punctuation but `-` and `_` dropped; each space a
`-`; a repeated slug gets `-1`, `-2`, ...) or an `id`/`name` of an HTML anchor in it. Links in
fenced code blocks and inline code are not links and are skipped.

Prints one line per broken link, `FILE:LINE: TARGET: why`, and exits 1 when there is one;
otherwise prints how many links it checked and exits 0. Python 3 standard library only.
"""

import os
import re
import sys
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# [text](target "title") and ![alt](target); the target may be wrapped in <>.
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTML_ANCHOR = re.compile(r"<a\s+[^>]*(?:id|name)\s*=\s*\"([^\"]+)\"", re.IGNORECASE)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def slug(text):
    """The anchor GitHub gives a heading whose Markdown source is `text`."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links and images: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    out = []
    for ch in text.lower():
        if ch in " -_" or unicodedata.category(ch)[0] in "LNM":
            out.append("-" if ch == " " else ch)
    return "".join(out)


def lines_outside_code(path):
    """(line number, line) of the file's lines outside fenced code blocks."""
    fence = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = FENCE.match(line)
            if fence:
                if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                    fence = None
                continue
            if m:
                fence = m.group(1)
                continue
            yield number, line.rstrip("\n")


_anchors = {}


def anchors(path):
    """The anchors a Markdown file defines: its headings' slugs and its HTML anchors."""
    if path not in _anchors:
        found, seen = set(), {}
        for _, line in lines_outside_code(path):
            m = HEADING.match(line)
            if m:
                base = slug(m.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else f"{base}-{n}")
            found.update(HTML_ANCHOR.findall(line))
        _anchors[path] = found
    return _anchors[path]


def targets(path):
    """(line number, target) of every link in a Markdown file."""
    for number, line in lines_outside_code(path):
        m = REFERENCE_DEF.match(line)
        if m:
            yield number, m.group(1)
            continue
        for link in INLINE_LINK.finditer(INLINE_CODE.sub("", line)):
            yield number, link.group(1)


def check(path):
    """The broken links of one file, as messages; and how many links it has."""
    problems, count = [], 0
    rel = os.path.relpath(path, ROOT)
    for number, target in targets(path):
        target = target.strip("<>")
        if SCHEME.match(target) or target.startswith("//"):
            continue
        count += 1
        file_part, _, anchor = target.partition("#")
        where = f"{rel}:{number}: {target}"
        if file_part:
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
            if not os.path.exists(dest):
                problems.append(f"{where}: no such file or directory")
                continue
        else:
            dest = path
        if anchor:
            if not dest.endswith(".md") or os.path.isdir(dest):
                continue
            if anchor not in anchors(dest):
                problems.append(
                    f"{where}: no heading of {os.path.relpath(dest, ROOT)} has the anchor #{anchor}"
                )
    return problems, count


def main(argv):
    files = argv or ["README.md"] + sorted(
        os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md")
    )
    problems, count = [], 0
    for name in files:
        path = os.path.join(ROOT, name) if not os.path.isabs(name) else name
        if not os.path.isfile(path):
            problems.append(f"{name}: no such file")
            continue
        found, n = check(path)
        problems += found
        count += n
    for p in problems:
        print(p)
    if problems:
        print(f"check-links: {len(problems)} broken of {count} relative links in {len(files)} files")
        return 1
    print(f"check-links: {count} relative links in {len(files)} files, all resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
