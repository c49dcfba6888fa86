#!/usr/bin/env python3
"""The house's proportions, from the source text: each crate's share of the non-test
lines, and inside each crate the imports that run back up a floor.

A room is a top-level module of a crate's `src/` (a file, or a folder as one room), and
the crate root; unit tests are left out (`tests.rs` files, the `#[cfg(test)]` module at
a file's end). An arrow A -> B is A naming something of B: a `use`, or a `crate::`,
`super::` or `self::` path; a name the crate root re-exports counts at the room that
defines it, and the root handing it on draws no arrow. A `mod` line is the floor plan,
not an arrow. Rooms are laid out importers first, by a greedy order that leaves as few
arrows as it can leading to a room laid out before their own: those run back up (in a
crate without a loop, none; a loop through what the root itself defines counts).

Prints one line per crate and exits 1 when a crate holds more than MAX_SHARE of the
lines or more than MAX_BACK of its arrows run back up. `tests/it/layers.rs` runs it.
"""

import os
import re
import sys
import tomllib

MAX_SHARE = 0.20
MAX_BACK = 0.10


def code_lines(text):
    """The lines of a file before its unit tests' module."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.strip() == "#[cfg(test)]" and i + 1 < len(lines) and re.match(r"\s*mod tests\b", lines[i + 1]):
            return lines[:i]
    return lines


def strip(text):
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def expand(tree):
    """`a::{b, c::{d}}` -> [a::b, a::c::d]."""
    tree = tree.strip()
    depth, start = 0, None
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                prefix, inner = tree[:start], tree[start + 1 : i]
                parts, d, cur = [], 0, ""
                for c in inner:
                    if c == "," and d == 0:
                        parts.append(cur)
                        cur = ""
                        continue
                    d += c == "{"
                    d -= c == "}"
                    cur += c
                parts.append(cur)
                out = []
                for p in parts:
                    if p.strip():
                        out += [prefix + q for q in expand(p)]
                return out
    return [tree.split(" as ")[0].strip()]


class Crate:
    def __init__(self, src):
        self.src = src
        self.files = {}  # module path tuple -> file
        for root, dirs, files in os.walk(src):
            dirs[:] = [d for d in dirs if d != "tests"]
            for f in files:
                if not f.endswith(".rs") or f == "tests.rs":
                    continue
                rel = os.path.relpath(os.path.join(root, f), src)
                parts = rel[:-3].split(os.sep)
                if parts[-1] in ("mod", "lib", "main"):
                    parts = parts[:-1]
                self.files[tuple(parts)] = os.path.join(root, f)

    def file_of(self, path):
        """The longest module path of `path` that is a file."""
        for n in range(len(path), -1, -1):
            if tuple(path[:n]) in self.files:
                return tuple(path[:n])
        return None

    def reexports(self):
        """The names the crate root hands on (`pub use a::b::Name;`), by the room of each."""
        root = self.files.get(())
        names = {}
        if root:
            text = strip("\n".join(code_lines(open(root, encoding="utf-8").read())))
            for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", text):
                for p in expand(m.group(1)):
                    seg = [x.strip() for x in p.split("::")]
                    if seg[0] in ("crate", "self"):
                        seg = seg[1:]
                    if seg and (seg[0],) in self.files:
                        names[seg[-1]] = (seg[0],)
        return names

    def arrows(self):
        edges = set()
        handed_on = self.reexports()
        for module, file in self.files.items():
            text = strip("\n".join(code_lines(open(file, encoding="utf-8").read())))
            here = list(module)
            is_dir = os.path.basename(file) in ("mod.rs", "lib.rs", "main.rs")
            parent = here if is_dir else here[:-1]
            paths = []
            for m in re.finditer(r"\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", text):
                if m.group(1) and module == ():
                    continue  # the crate root handing names on draws no arrow
                paths += expand(m.group(2))
            paths += re.findall(r"(?<![\w:])((?:crate|super|self)(?:::\w+)+)", text)
            for p in paths:
                seg = [s.strip() for s in p.split("::")]
                if seg[0] == "crate" and len(seg) > 1 and seg[1] in handed_on:
                    target = list(handed_on[seg[1]])  # counted at the room defining it
                elif seg[0] == "crate":
                    target = seg[1:]
                elif seg[0] in ("super", "self"):
                    base = list(parent)
                    while seg and seg[0] == "super":
                        base = base[:-1]
                        seg = seg[1:]
                    if seg and seg[0] == "self":
                        seg = seg[1:]
                    target = base + seg
                elif tuple(parent + seg[:1]) in self.files:
                    target = parent + seg  # a child module used by name
                else:
                    continue
                to = self.file_of(target)
                if to is not None and to[:1] != module[:1]:
                    edges.add((module[:1], to[:1]))
        return edges


def back_arrows(nodes, edges):
    """The arrows that run back up: floors laid out by Eades, Lin and Smyth's greedy order
    (importers first; rooms that only import or are only imported settle first, then the
    room with the most arrows out over in), and every arrow from a room to one laid out
    before it."""
    out = {n: set() for n in nodes}
    into = {n: set() for n in nodes}
    for a, b in edges:
        out[a].add(b)
        into[b].add(a)
    left, first, last = set(nodes), [], []
    while left:
        moved = True
        while moved:
            moved = False
            for n in sorted(left):
                if not (out[n] & left):
                    last.insert(0, n)
                    left.discard(n)
                    moved = True
                elif not (into[n] & left):
                    first.append(n)
                    left.discard(n)
                    moved = True
        if left:
            n = max(sorted(left), key=lambda n: len(out[n] & left) - len(into[n] & left))
            first.append(n)
            left.discard(n)
    place = {n: i for i, n in enumerate(first + last)}
    return sum(1 for a, b in edges if place[b] < place[a])


def main(root):
    members = tomllib.load(open(os.path.join(root, "Cargo.toml"), "rb"))["workspace"]["members"]
    rows, total = [], 0
    for member in members:
        manifest = tomllib.load(open(os.path.join(root, member, "Cargo.toml"), "rb"))
        crate = Crate(os.path.join(root, member, "src"))
        lines = sum(len(code_lines(open(f, encoding="utf-8").read())) for f in crate.files.values())
        edges = crate.arrows()
        rooms = sorted({m[:1] for m in crate.files})
        back = back_arrows(rooms, edges)
        rows.append((manifest["package"]["name"], lines, len(rooms), len(edges), back))
        total += lines
    failed = False
    print(f"{'crate':<24}{'lines':>7}{'share':>7}{'rooms':>7}{'arrows':>8}{'back up':>9}")
    for name, lines, rooms, arrows, back in sorted(rows, key=lambda r: -r[1]):
        share = lines / total
        ratio = back / arrows if arrows else 0.0
        bad = share > MAX_SHARE or ratio >= MAX_BACK
        failed |= bad
        print(f"{name:<24}{lines:>7}{share:>7.1%}{rooms:>7}{arrows:>8}{back:>5} {ratio:>3.0%}{'  over the limit' if bad else ''}")
    print(f"{'all':<24}{total:>7}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
