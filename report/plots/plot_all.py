#!/usr/bin/python3
"""Makes every figure listed in FIGURES from the results directory.

    python3 report/plots/plot_all.py --results results --out figures [--only NAME ...] [--skip-missing]

Every input is loaded and checked (exists, valid JSON, known schema) before anything is
drawn, and the figures are drawn into a temporary folder and moved into --out only when all
of them succeeded, so a bad input leaves --out as it was. A missing input is an error naming
the file; --skip-missing instead skips the figures that need it (and says so). `clbo
reproduce` does not pass --skip-missing: it produces every input first.
"""
import argparse
import importlib
import os
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402  (must come first: the matplotlib guard)

# The one place to change what is plotted. name: output file stem (name.png, name.svg);
# script: the module in report/plots/ whose plot() draws it; input: path under --results;
# options: that plot()'s selection arguments (see each script's --help); made_by: the
# command that writes the input (shown when it is missing).
# Any clbo.simulate/1 file (results/paper/*.json too) works as input of the sim figures.
FIGURES = [
    dict(name="throughput", script="throughput", input="sim/fabrics-optimizers.json",
         options={}, made_by="clbo simulate experiments/sim/fabrics-optimizers.json"),
    dict(name="throughput-sweep", script="throughput", input="sim/default-sweep.json",
         options={}, made_by="clbo simulate"),
    dict(name="speedup", script="speedup", input="sim/fabrics-optimizers.json", options={},
         made_by="clbo simulate experiments/sim/fabrics-optimizers.json"),
    dict(name="speedup-sweep", script="speedup", input="sim/default-sweep.json", options={},
         made_by="clbo simulate"),
    dict(name="volume", script="volume", input="sim/fabrics-optimizers.json",
         options={"cluster": "paper-ib-v100", "gpus": 64},
         made_by="clbo simulate experiments/sim/fabrics-optimizers.json"),
    dict(name="breakdown", script="breakdown", input="sim/fabrics-optimizers.json",
         options={"gpus": 64},
         made_by="clbo simulate experiments/sim/fabrics-optimizers.json"),
    dict(name="convergence-adam_family", script="convergence",
         input="convergence/adam_family.json", options={},
         made_by="clbo train experiments/convergence/adam_family.json"),
    dict(name="convergence-lamb_family", script="convergence",
         input="convergence/lamb_family.json", options={},
         made_by="clbo train experiments/convergence/lamb_family.json"),
    dict(name="roofline", script="roofline", input="bench/kernels-cpu.json", options={},
         made_by="clbo reproduce (CPU kernel benchmarks)"),
    dict(name="validation", script="validation", input="validation/full.json", options={},
         made_by="clbo validate experiments/validation/full.json (as root)"),
]


def check_inputs(figures, results_dir, skip_missing):
    """Loads every input once; returns the figures to draw. Missing inputs are errors
    unless skip_missing; corrupt files and unknown schemas always are."""
    chosen = []
    for fig in figures:
        path = os.path.join(results_dir, fig["input"])
        if skip_missing and not os.path.exists(path):
            print(f"[plots] skipped {fig['name']}: input {path} is missing", file=sys.stderr)
            continue
        if not os.path.exists(path):
            raise common.PlotError(f"{path}: results file is missing (figure {fig['name']}; "
                                   f"made by `{fig['made_by']}`; or pass --skip-missing)")
        common.load_results(path)
        chosen.append(fig)
    return chosen


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="figures: " + ", ".join(f["name"] for f in FIGURES))
    p.add_argument("--results", default="results", help="results directory (default: results)")
    p.add_argument("--out", default="figures", help="output directory (default: figures)")
    p.add_argument("--only", action="append", metavar="NAME",
                   help="draw only this figure (repeatable)")
    p.add_argument("--skip-missing", action="store_true",
                   help="skip figures whose input file is missing instead of failing")
    a = p.parse_args()
    figures = FIGURES
    if a.only:
        names = [f["name"] for f in FIGURES]
        unknown = [n for n in a.only if n not in names]
        if unknown:
            raise common.PlotError(f"--only: unknown figure {', '.join(unknown)} "
                                   f"(known: {', '.join(names)})")
        figures = [f for f in FIGURES if f["name"] in a.only]
    figures = check_inputs(figures, a.results, a.skip_missing)
    os.makedirs(a.out, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".plot_all.", dir=a.out)
    try:
        written = []
        for i, fig in enumerate(figures, 1):
            print(f"[plots] {i}/{len(figures)} {fig['name']} <- "
                  f"{os.path.join(a.results, fig['input'])}", file=sys.stderr)
            module = importlib.import_module(fig["script"])
            written += module.plot(a.results, staging, name=fig["name"], input=fig["input"],
                                   **fig["options"])
        for f in written:
            target = os.path.join(a.out, os.path.basename(f))
            os.replace(f, target)
            print(f"wrote {target}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)


if __name__ == "__main__":
    common.run_main(main)
