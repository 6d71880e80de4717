#!/usr/bin/python3
"""Compares two clbo results files the way the regeneration test does.

    compare_results.py COMMITTED FRESH

Both files are reduced to what a rerun must reproduce exactly: every key named "timing"
(at any depth: host wall and CPU time) and the top-level "environment" (git hash, host,
library versions) are removed. The rest is dumped canonically (sorted keys) and compared
byte for byte. Exit 0: identical; 1: they differ (the first differing field is named);
2: a file is missing or is not JSON (named).
"""
import json
import sys


class ResultsFileError(Exception):
    """A file that cannot be compared: missing, unreadable or not JSON."""


def without_timing(value):
    """The value with every "timing" key removed, at any depth."""
    if isinstance(value, dict):
        return {k: without_timing(v) for k, v in value.items() if k != "timing"}
    if isinstance(value, list):
        return [without_timing(v) for v in value]
    return value


def comparable(doc):
    """What two runs of the same config must agree on."""
    doc = without_timing(doc)
    if isinstance(doc, dict):
        doc.pop("environment", None)
    return doc


def canonical_bytes(doc):
    return json.dumps(comparable(doc), sort_keys=True, indent=1, ensure_ascii=False).encode()


def load(path, role):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise ResultsFileError(f"{path}: the {role} results file does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ResultsFileError(f"{path}: the {role} results file is not readable JSON: {e}") from None


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def first_difference(a, b, path="$", rel_tol=0.0):
    """The path of the first field where a and b differ, and both values; None if equal.
    rel_tol > 0 compares numbers (an int and a float alike) to that relative tolerance, for
    results whose floating point may take another libm path on another CPU; 0: exactly."""
    if rel_tol > 0 and is_number(a) and is_number(b):
        return None if abs(a - b) <= rel_tol * max(abs(a), abs(b)) else (path, a, b)
    if type(a) is not type(b):
        return path, a, b
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key}", a.get(key, "<absent>"), b.get(key, "<absent>")
            found = first_difference(a[key], b[key], f"{path}.{key}", rel_tol)
            if found:
                return found
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{path}[{i}]", rel_tol)
            if found:
                return found
        if len(a) != len(b):
            return f"{path} (length)", len(a), len(b)
        return None
    return None if a == b else (path, a, b)


def compare_files(committed_path, fresh_path):
    """None when the files agree; otherwise a one-line description of the first difference."""
    committed = load(committed_path, "committed")
    fresh = load(fresh_path, "regenerated")
    if canonical_bytes(committed) == canonical_bytes(fresh):
        return None
    found = first_difference(comparable(committed), comparable(fresh))
    if found is None:  # equal values, different bytes: e.g. 1 vs 1.0
        return "the canonical dumps differ in number formatting"
    where, old, new = found
    short = lambda v: (json.dumps(v)[:120])  # noqa: E731
    return f"{where}: committed {short(old)}, regenerated {short(new)}"


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        diff = compare_files(argv[1], argv[2])
    except ResultsFileError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if diff:
        print(f"{argv[2]} differs from {argv[1]}: {diff}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
