#!/usr/bin/env python3
"""The shape of the house: circles between files, the largest files and the longest functions.

Usage: scripts/house.py [--check] [crate directory ...]   (default: crates/* and bins/*)

For each crate it reads every `.rs` file under `src/`, maps each file to its module path
(`src/a/b.rs` and `src/a/b/mod.rs` are `a::b`; `lib.rs`/`main.rs` the root) and draws an arrow
from a file to every module of the same crate it names: `crate::a::b`, `super::x`,
`self::x` paths anywhere in the code (in `use` lines and inline), resolved to the deepest
module that exists. In-file unit tests (from `#[cfg(test)]` on) are skipped. `mod x;` declarations are not arrows (a parent holding a child is not a
dependency), nor are the re-exports of a module root (`pub use` in `lib.rs`, `main.rs`, a `mod.rs` or
an `a.rs` beside its `a/`: naming a child's item through its parent is naming the child). Comments are skipped.

It prints the circles (strongly connected groups of two or more files, and the arrows inside
each), the files over 600 lines outside `crates/model`, and the functions of library and binary code
(`src/`) over 100 lines (from `fn` to the closing brace at the same indentation) without a
plain `//` comment above their docs saying why. Test functions are scenarios read top to
bottom and are not counted (docs/ARCHITECTURE.md). With `--check` it exits 1 when any of the three lists is not empty
(issue 20's rules: docs/ARCHITECTURE.md, "Rules of the house").
"""

import os
import re
import sys

MAX_FILE_LINES = 600
MAX_FN_LINES = 100
ROOTS = ("lib.rs", "main.rs")

PATH_RE = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_GROUP_RE = re.compile(r"\b(crate|super|self)::((?:[A-Za-z_][A-Za-z0-9_]*::)*)\{([^}]*)\}", re.S)
FN_RE = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)")


def module_of(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] in ("lib", "main", "mod"):
        rel = rel[:-1]
    return tuple(rel)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//", 1)[0] if "//" in line and '"' not in line.split("//", 1)[0] else line
                     for line in text.splitlines())


def is_root(path):
    """A module root: lib.rs, main.rs, mod.rs, or `a.rs` beside a directory `a/` of its children."""
    return os.path.basename(path) in ROOTS + ("mod.rs",) or os.path.isdir(path[:-3])


def reexports(src, files, modules):
    """What the module roots re-export: {(root module, name): module path it comes from}."""
    out = {}
    for f in files:
        if not is_root(f):
            continue
        here = module_of(src, f)
        text = strip_comments(open(f, encoding="utf-8").read())
        for m in re.finditer(r"pub(?:\([^)]*\))?\s+use\s+([^;]+);", text):
            body = re.sub(r"\s+", "", m.group(1))
            g = re.match(r"((?:[A-Za-z_][A-Za-z0-9_]*::)*)\{(.*)\}$", body)
            items = ([(g.group(1), i) for i in g.group(2).split(",") if i] if g
                     else [(body.rsplit("::", 1)[0] + "::" if "::" in body else "", body.rsplit("::", 1)[-1])])
            for prefix, item in items:
                parts = [p for p in prefix.split("::") if p]
                name = item.split("as")[-1] if "as" in item and not item.startswith("as") else item
                name = name.split("::")[-1]
                item_parts = item.split("as")[0].split("::") if "as" in item else item.split("::")
                parts = parts + item_parts[:-1]
                if parts and parts[0] == "crate":
                    start, parts = (), parts[1:]
                elif parts and parts[0] == "self":
                    start, parts = here, parts[1:]
                elif parts and parts[0] == "super":
                    start, parts = here[:-1], parts[1:]
                else:
                    start = here
                for i in range(len(parts), 0, -1):
                    cand = start + tuple(parts[:i])
                    if cand in modules:
                        out[(here, name)] = cand
                        break
    return out


def arrows(src, files):
    modules = {module_of(src, f): f for f in files}
    exported = reexports(src, files, modules)
    edges = {f: set() for f in files}
    for f in files:
        here = module_of(src, f)
        # A file's own module for `self::` and `super::`: a mod.rs/lib.rs is its directory's
        # module; a.rs is module a, whose parent is the directory.
        text = strip_comments(open(f, encoding="utf-8").read())
        # In-file unit tests (`#[cfg(test)] mod tests`, at the end by the house's habit) may
        # use what they like.
        text = text.split("#[cfg(test)]", 1)[0]
        if is_root(f):
            text = "\n".join(l for l in text.splitlines() if not re.match(r"\s*pub(\([^)]*\))?\s+use\b", l))
        names = []
        for m in USE_GROUP_RE.finditer(text):
            base = m.group(1), m.group(2).rstrip(":").split("::") if m.group(2) else []
            for part in m.group(3).split(","):
                part = part.strip().split(" as ")[0].strip()
                if part:
                    names.append((base[0], [p for p in base[1] if p] + part.split("::")))
        for m in PATH_RE.finditer(text):
            names.append((m.group(1), m.group(2).strip(":").split("::")))
        # Bare paths to the file's own child modules (`mod x;` here, then `x::Item`).
        for child in (m for m in modules if len(m) == len(here) + 1 and m[:-1] == here):
            if re.search(r"(?<![:\w])" + child[-1] + r"::", text):
                names.append(("self", [child[-1]]))
        for anchor, parts in names:
            if anchor == "crate":
                start = ()
            elif anchor == "self":
                start = here
            else:
                start = here[:-1]
                while parts and parts[0] == "super":
                    start, parts = start[:-1], parts[1:]
            target = None
            for i in range(len(parts), -1, -1):
                cand = start + tuple(parts[:i])
                if cand in modules:
                    # An item a module root re-exports belongs to the module it comes from.
                    if i < len(parts) and (cand, parts[i]) in exported:
                        cand = exported[(cand, parts[i])]
                    target = modules[cand]
                    break
            if target and target != f:
                edges[f].add(target)
    return edges


def circles(edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return out


def long_functions(path):
    lines = open(path, encoding="utf-8").read().splitlines()
    found = []
    for i, line in enumerate(lines):
        m = FN_RE.match(line)
        if not m:
            continue
        # A declaration without a body (a trait's) ends its signature with `;`.
        k = i
        while k < len(lines) and not lines[k].rstrip().endswith(("{", ";")):
            k += 1
        if k == len(lines) or lines[k].rstrip().endswith(";"):
            continue
        indent = m.group(1)
        end = None
        for j in range(i + 1, len(lines)):
            if lines[j].startswith(indent + "}") and not lines[j].startswith(indent + " "):
                end = j
                break
        if end is None:
            continue
        length = end - i + 1
        if length > MAX_FN_LINES:
            # The reason: a plain comment above the function's docs and attributes.
            k = i - 1
            while k >= 0 and re.match(r"\s*(///|#\[)", lines[k]):
                k -= 1
            reason = []
            while k >= 0 and re.match(r"\s*//(?!/)", lines[k]):
                reason.append(lines[k])
                k -= 1
            if not reason:
                found.append((length, m.group(2), i + 1))
    return found


def main(argv):
    check = "--check" in argv
    dirs = [a for a in argv if a != "--check"]
    if not dirs:
        dirs = sorted(os.path.join(top, d) for top in ("crates", "bins") if os.path.isdir(top)
                      for d in os.listdir(top))
    bad = 0
    all_files = []
    for crate in dirs:
        for sub in ("src",):
            src = os.path.join(crate, sub)
            if not os.path.isdir(src):
                continue
            files = sorted(os.path.join(r, n) for r, _, ns in os.walk(src) for n in ns if n.endswith(".rs"))
            all_files += files
            edges = arrows(src, files)
            for group in circles(edges):
                bad += 1
                print(f"circle in {crate}: " + " ↔ ".join(os.path.relpath(g, src) for g in group))
                for a in group:
                    for b in sorted(edges[a] & set(group)):
                        print(f"    {os.path.relpath(a, src)} → {os.path.relpath(b, src)}")
    for top in ("crates", "bins"):
        for r, _, ns in os.walk(top):
            for n in ns:
                if n.endswith(".rs") and "/target" not in r:
                    p = os.path.join(r, n)
                    if p not in all_files:
                        all_files.append(p)
    sizes = sorted(((sum(1 for _ in open(p, encoding="utf-8")), p) for p in all_files), reverse=True)
    over = [(n, p) for n, p in sizes if n > MAX_FILE_LINES and not p.startswith("crates/model/")]
    for n, p in over:
        bad += 1
        print(f"file over {MAX_FILE_LINES} lines: {p} ({n})")
    print("largest files: " + ", ".join(f"{p} ({n})" for n, p in sizes[:5]))
    fns = sorted(((length, name, line, p) for p in all_files if "/src/" in p
                  for length, name, line in long_functions(p)), reverse=True)
    for length, name, line, p in fns:
        bad += 1
        print(f"function over {MAX_FN_LINES} lines without a reason above it: {p}:{line} {name} ({length})")
    print(f"{bad} finding(s)")
    return 1 if check and bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
