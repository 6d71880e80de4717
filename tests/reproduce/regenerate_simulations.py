#!/usr/bin/python3
"""The byte-identical regeneration test of the committed simulation results.

    regenerate_simulations.py --clbo build/bin/clbo --source . [--jobs N] [--keep DIR]

For every experiments/sim/*.json, and every experiments/paper/*.json with a "simulate"
block, it runs `clbo simulate` (in the source tree, so the results record the experiment
path exactly as the committed ones do) into a temporary folder and compares the result with
the committed results/sim|paper/<name>.json, ignoring "timing" fields and the environment
(compare_results.py). A committed file that is missing fails the test, named. Exit 0 when
every result is reproduced, 1 otherwise.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_results  # noqa: E402


def experiments(source):
    """(experiment path relative to source, committed results path relative to source)."""
    found = []
    for kind in ("sim", "paper"):
        folder = os.path.join(source, "experiments", kind)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".json"):
                continue
            rel = os.path.join("experiments", kind, name)
            if kind == "paper":
                with open(os.path.join(source, rel), encoding="utf-8") as f:
                    if "simulate" not in json.load(f):
                        continue  # a claims-only spec: nothing to simulate
            found.append((rel, os.path.join("results", kind, name)))
    return found


def regenerate(clbo, source, experiment, committed, scratch):
    """One experiment: None when reproduced, else the reason it is not."""
    committed_path = os.path.join(source, committed)
    if not os.path.exists(committed_path):
        return (f"{committed} is not committed (run `clbo reproduce` and commit results/, "
                f"see docs/reproduce.md)")
    fresh = os.path.join(scratch, experiment.replace(os.sep, "_"))
    run = subprocess.run([clbo, "simulate", experiment, "-o", fresh, "-q"], cwd=source,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        return f"clbo simulate {experiment} failed (exit {run.returncode}): {run.stderr.strip()}"
    try:
        diff = compare_results.compare_files(committed_path, fresh)
    except compare_results.ResultsFileError as e:
        return str(e)
    return f"{committed} is not reproduced: {diff}" if diff else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clbo", required=True, help="the clbo binary")
    parser.add_argument("--source", required=True, help="the source tree (experiments/, results/)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--keep", help="write the regenerated files here instead of a temp dir")
    args = parser.parse_args()
    clbo, source = os.path.abspath(args.clbo), os.path.abspath(args.source)

    todo = experiments(source)
    if not todo:
        print(f"error: no simulation experiments under {source}/experiments", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="clbo-regen-") as tmp:
        scratch = args.keep or tmp
        os.makedirs(scratch, exist_ok=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = {exp: pool.submit(regenerate, clbo, source, exp, committed, scratch)
                       for exp, committed in todo}
            failures = []
            for exp, future in futures.items():
                problem = future.result()
                print(f"{'ok  ' if problem is None else 'FAIL'} {exp}", flush=True)
                if problem:
                    failures.append(problem)
    for problem in failures:
        print(f"  {problem}")
    print(f"{len(todo) - len(failures)} of {len(todo)} committed simulation results reproduced "
          f"byte for byte (timing and environment ignored)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
