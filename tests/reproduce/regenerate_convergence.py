#!/usr/bin/python3
"""The byte-identical regeneration test of the committed convergence results.

    regenerate_convergence.py --clbo build/bin/clbo --source . [--full] [--keep DIR]

Reruns `clbo train` on experiments/convergence/smoke.json (with --full: on every experiment
there whose result is committed, about 40 minutes on two idle cores) in the source tree, into a
temporary folder, and compares each result with the committed results/convergence/<name>.json,
ignoring "timing" fields and the environment (compare_results.py). Training numerics do not
depend on the CPU (docs/convergence.md, "Reproducible on any machine"), so this passes on any
x86-64 machine, not only the one that produced the committed files. Exit 0 when every result
is reproduced, 1 otherwise, 77 (skipped) when this clbo has no `train` or the data is missing.
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_results  # noqa: E402

SKIP = 77


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clbo", required=True, help="the clbo binary")
    parser.add_argument("--source", required=True, help="the source tree (experiments/, results/)")
    parser.add_argument("--full", action="store_true", help="every committed convergence result")
    parser.add_argument("--keep", help="write the regenerated files here instead of a temp dir")
    args = parser.parse_args()
    clbo, source = os.path.abspath(args.clbo), os.path.abspath(args.source)

    folder = os.path.join(source, "experiments", "convergence")
    names = ["smoke"]
    if args.full:
        names = sorted(f[:-5] for f in os.listdir(folder) if f.endswith(".json") and
                       os.path.exists(os.path.join(source, "results", "convergence", f)))
    if not names:
        print("error: no convergence experiment to regenerate", file=sys.stderr)
        return 1
    check = subprocess.run([clbo, "train", "--check", os.path.join(folder, names[0] + ".json")],
                           cwd=source, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
    if check.returncode != 0:
        print(f"skipped: `clbo train --check` failed (no convergence engine or no data): "
              f"{check.stderr.strip()}")
        return SKIP
    failures = []
    with tempfile.TemporaryDirectory(prefix="clbo-regen-train-") as tmp:
        scratch = args.keep or tmp
        os.makedirs(scratch, exist_ok=True)
        for name in names:
            experiment = os.path.join("experiments", "convergence", name + ".json")
            committed = os.path.join(source, "results", "convergence", name + ".json")
            fresh = os.path.join(scratch, name + ".json")
            if not os.path.exists(committed):
                failures.append(f"results/convergence/{name}.json is not committed")
                continue
            run = subprocess.run([clbo, "train", experiment, "-o", fresh, "-q"], cwd=source,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if run.returncode != 0:
                failures.append(f"clbo train {experiment} failed (exit {run.returncode}): "
                                f"{run.stderr.strip()}")
                continue
            try:
                diff = compare_results.compare_files(committed, fresh)
            except compare_results.ResultsFileError as e:
                diff = str(e)
            print(f"{'ok  ' if not diff else 'FAIL'} {experiment}", flush=True)
            if diff:
                failures.append(f"results/convergence/{name}.json is not reproduced: {diff}")
    for problem in failures:
        print(f"  {problem}")
    print(f"{len(names) - len(failures)} of {len(names)} committed convergence results "
          f"reproduced byte for byte (timing and environment ignored)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
