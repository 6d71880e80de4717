#!/usr/bin/env python3
"""Every citation of the reference files resolves inside the repository.

`check_citations.py SOURCE_DIR` scans code, experiments, results, tables and docs for
citations of docs/reference/*.md (`docs/reference/published.md §3.1 row 7`,
`... §5.1–§5.2`, `... §7.3 and §8.2`) and fails, naming file and line, when
- the cited file does not exist in docs/reference/;
- a cited section has no heading with that number in the file;
- a cited row is not in the first column of a table under that section;
- a reference file is named without its repository path (`published.md:11`, `simgrid-notes
  §7.3`), or a path outside the repository is cited (the project's shared folder beside it,
  `ARCHITECTURE.md`).
Section and row rules: docs/reference/README.md. `check_citations.py --self-test` checks
that each kind of bad citation above is caught.
"""
import os
import re
import sys

SCANNED = (".cpp", ".hpp", ".h", ".cu", ".cuh", ".py", ".sh", ".json", ".md", ".txt", ".cmake",
           ".tex", ".csv")
SKIPPED_DIRS = {".git", "__pycache__", "node_modules"}
REF_NAMES = ("algorithms", "published", "deepspeed-dataflow", "simgrid-notes")

SECTION = r"§(\d+[a-z]?(?:\.\d+)*)"
CITATION = re.compile(r"docs/reference/([A-Za-z0-9_-]+)\.md")
# What may follow a cited file: a chain of sections joined by –, -, "and", ",", "to",
# each optionally followed by "row N", "rows N–M" or "rows N and M".
FOLLOW = re.compile(r"\s*(?:(?:,|and|to|–|-)\s*)?" + SECTION +
                    r"(?:\s+rows?\s+(\d+)(?:\s*(?:–|-|and|to)\s*(\d+))?)?")
BARE = re.compile(r"(?<![\w/.-])(" + "|".join(REF_NAMES) + r")(?:\.md\b|(?=\s+§))")
OUTSIDE = re.compile(r"\.\./shared/|\bARCHITECTURE\.md\b")
# A citation of the shared folder, built so this file does not itself cite it.
OUTSIDE_SAMPLE = "../" + "shared/reference/published.md"
HEADING = re.compile(r"^#+\s+(\d+[a-z]?(?:\.\d+)*)\.?\s")
ROW = re.compile(r"^\|\s*(\d+)\s*\|")


def index_reference(path):
    """Section number -> set of row numbers in tables under that heading (and its parents)."""
    sections, current = {}, []
    for line in open(path, encoding="utf-8"):
        m = HEADING.match(line)
        if m:
            sec = m.group(1)
            sections.setdefault(sec, set())
            current = [sec]
            continue
        r = ROW.match(line)
        if r and current:
            sections[current[0]].add(int(r.group(1)))
    return sections


def files_to_scan(root):
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        top = rel.split(os.sep)[0]
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and
                             not (rel == "." and (d.startswith("build") or d == "out")))
        if top == "docs" and rel.startswith(os.path.join("docs", "reference")):
            in_reference = True
        else:
            in_reference = False
        for name in sorted(filenames):
            if name.endswith(SCANNED):
                yield os.path.join(dirpath, name), in_reference


def check(root):
    refdir = os.path.join(root, "docs", "reference")
    refs = {}
    for name in os.listdir(refdir):
        if name.endswith(".md"):
            refs[name[:-3]] = index_reference(os.path.join(refdir, name))
    errors, citations = [], 0
    this_file = os.path.abspath(__file__)
    for path, in_reference in files_to_scan(root):
        if os.path.abspath(path) == this_file:
            continue
        rel = os.path.relpath(path, root)
        try:
            lines = open(path, encoding="utf-8").read().split("\n")
        except (UnicodeDecodeError, OSError):
            continue
        for no, line in enumerate(lines, 1):
            where = f"{rel}:{no}"
            for m in OUTSIDE.finditer(line):
                errors.append(f"{where}: cites {m.group(0)!r}, which is not in the repository "
                              "(cite docs/reference/ or docs/architecture.md)")
            if not in_reference:
                for m in BARE.finditer(line):
                    errors.append(f"{where}: {m.group(0)!r} without its path: write "
                                  f"docs/reference/{m.group(1)}.md and a section (§N)")
            for m in CITATION.finditer(line):
                citations += 1
                name = m.group(1)
                if name not in refs:
                    errors.append(f"{where}: docs/reference/{name}.md does not exist")
                    continue
                pos = m.end()
                while True:
                    f = FOLLOW.match(line, pos)
                    if not f:
                        break
                    pos = f.end()
                    sec = f.group(1)
                    if sec not in refs[name]:
                        errors.append(f"{where}: docs/reference/{name}.md has no section §{sec}")
                        continue
                    for row in (f.group(2), f.group(3)):
                        if row and int(row) not in refs[name][sec]:
                            errors.append(f"{where}: docs/reference/{name}.md §{sec} has no "
                                          f"row {row}")
    return errors, citations


def self_test():
    """The checker fails on each kind of bad citation and passes good ones."""
    import tempfile
    good = ["docs/reference/published.md §3.1 row 7", "docs/reference/published.md §5.1–§5.2",
            "docs/reference/simgrid-notes.md §7.3 and §8.2", "docs/reference/algorithms.md §7b",
            "docs/reference/published.md §4.1 rows 1 and 7", "see docs/reference/algorithms.md."]
    bad = ["docs/reference/published.md §9", "docs/reference/published.md §3.1 row 14",
           "docs/reference/nothing.md", "published.md:11", "simgrid-notes §7.3",
           "algorithms.md §2", OUTSIDE_SAMPLE, "ARCHITECTURE.md",
           "docs/reference/algorithms.md §2 and §12"]
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs", "reference"))
        for name in REF_NAMES:
            src = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "reference",
                               name + ".md")
            with open(src, encoding="utf-8") as f, \
                    open(os.path.join(root, "docs", "reference", name + ".md"), "w") as g:
                g.write(f.read())
        failures = 0
        for text, expect_error in [(t, False) for t in good] + [(t, True) for t in bad]:
            with open(os.path.join(root, "x.cpp"), "w") as f:
                f.write("// " + text + "\n")
            errors, _ = check(root)
            if bool(errors) != expect_error:
                failures += 1
                print(f"self-test: {text!r}: expected {'an error' if expect_error else 'none'}, "
                      f"got {errors}")
        print(f"self-test: {len(good) + len(bad)} cases, {failures} failures")
        return 1 if failures else 0


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    errors, citations = check(sys.argv[1])
    for e in errors:
        print(e)
    print(f"{citations} citations checked, {len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
