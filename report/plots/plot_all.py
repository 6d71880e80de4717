#!/usr/bin/python3
"""Makes every figure listed in FIGURES from the results directory, or with a PATH every
figure that fits each results file in it.

    python3 report/plots/plot_all.py --results results --out figures [--only NAME ...] [--skip-missing]
    python3 report/plots/plot_all.py PATH --out DIR     # PATH: a results file or folder

Every input is loaded and checked (exists, valid JSON, known schema) before anything is
drawn, and the figures are drawn into a temporary folder and moved into --out only when all
of them succeeded, so a bad input leaves --out as it was. A missing input is an error naming
the file; --skip-missing instead skips the figures that need it (and says so). `clbo
reproduce` does not pass --skip-missing: it produces every input first.

With a PATH, every results file is loaded and checked first (one that is not a clbo result
is an error naming it), then each gets the figures that fit its schema (PER_SCHEMA), named
<file key>-<figure> ("sim/my-run" gives sim-my-run-throughput.png). A figure a file cannot
give (one optimizer per GPU count twice, say) is skipped with the reason on stderr; when no
figure fits at all, the run fails.
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
    dict(name="convergence-gaps", script="convergence_gaps",
         input="convergence/adam_family.json", options={},
         made_by="experiments/convergence/run_all.sh (the families and their _2x and _shifted "
         "files)"),
    dict(name="roofline", script="roofline", input="bench/kernels-cpu.json",
         options={"also": ["gpu/kernels-cuda.json"]},
         made_by="clbo reproduce (CPU kernel benchmarks)"),
    dict(name="validation", script="validation", input="validation/full.json", options={},
         made_by="clbo validate experiments/validation/full.json (as root)"),
    dict(name="calibration-table1", script="calibration", input="sim/table1-calibration.json",
         options={}, made_by="clbo simulate experiments/sim/table1-calibration.json"),
    dict(name="paper-speedup-zero-one-adam", script="speedup", input="paper/zero-one-adam.json",
         options={}, made_by="clbo simulate experiments/paper/zero-one-adam.json"),
    dict(name="paper-volume-onebit-adam", script="volume",
         input="paper/onebit-adam-throughput.json",
         options={"cluster": "paper-eth-v100", "gpus": 64},
         made_by="clbo simulate experiments/paper/onebit-adam-throughput.json"),
]

# The figures that fit a results file of each schema, for `plot_all.py PATH` (any results):
# (figure suffix, script, whether the file's runs can give it).
def _sim_has(key):
    return lambda doc: any(isinstance(r, dict) and r.get(key)
                           for r in doc.get("runs") or [])


PER_SCHEMA = {
    "clbo.simulate/1": [("throughput", "throughput", None),
                        ("speedup", "speedup", _sim_has("baseline")),
                        ("volume", "volume", None),
                        ("breakdown", "breakdown", None),
                        ("calibration", "calibration", _sim_has("paper"))],
    "clbo.train/1": [("convergence", "convergence", None)],
    "clbo.bench.kernels/1": [("roofline", "roofline", None)],
    "clbo.bench.kernels/2": [("roofline", "roofline", None)],
    "clbo.bench.collectives/1": [("collectives", "collectives", None)],
    "clbo.validate/1": [("validation", "validation", None)],
}


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


def _draw(task):
    """One figure: (files written, None) or ([], the PlotError's message)."""
    script, args, kwargs = task
    try:
        return importlib.import_module(script).plot(*args, **kwargs), None
    except common.PlotError as e:
        common.plt.close("all")
        return [], str(e)


def results_files(path):
    """[(key, file)] of a results file or every *.json under a folder (recursively, but not
    inside raw/ folders, which keep other tools' own output; results/SCHEMA.md), sorted."""
    if os.path.isfile(path):
        return [(os.path.splitext(os.path.basename(path))[0], path)]
    if not os.path.isdir(path):
        raise common.PlotError(f"{path}: no such results file or folder")
    found = []
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d != "raw")
        for f in files:
            if f.endswith(".json"):
                full = os.path.join(root, f)
                found.append((os.path.splitext(os.path.relpath(full, path))[0]
                              .replace(os.sep, "/"), full))
    if not found:
        raise common.PlotError(f"{path}: the folder holds no results file (*.json)")
    return sorted(found)


def draw_each_file(path, out, specs):
    """Every figure that fits each results file under `path` (or `path` itself), named
    <key>-<figure>. A figure a file cannot give is skipped with the reason; no figure at
    all is an error."""
    files = results_files(path)
    # Every file is read and checked before anything is drawn: one that is not a clbo
    # result stops the run, naming it.
    docs = [(key, f, common.load_results(f)) for key, f in files]
    results_dir = os.path.dirname(path) if os.path.isfile(path) else path
    os.makedirs(out, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".plot_all.", dir=out)
    try:
        tasks, names, skipped = [], [], []
        for key, f, doc in docs:
            figures = PER_SCHEMA.get(doc["schema"], [])
            if not figures:
                skipped.append(f"{f}: no figure draws {doc['schema']} results")
            for suffix, script, fits in figures:
                name = f"{key.replace('/', '-')}-{suffix}"
                if fits is not None and not fits(doc):
                    continue  # e.g. no baseline, so no speedup: nothing to say
                options = {"specs_dir": specs} if script in ("speedup", "volume") else {}
                print(f"[plots] {name} <- {f}", file=sys.stderr)
                tasks.append((script, (results_dir, staging),
                              dict(name=name, input=os.path.relpath(f, results_dir), **options)))
                names.append(name)
        written = []
        for name, (files, error) in zip(names, map(_draw, tasks)):
            written += files
            if error:
                skipped.append(f"{name}: {error}")
        for reason in skipped:
            print(f"[plots] skipped {reason}", file=sys.stderr)
        if not written:
            raise common.PlotError(f"{path}: no figure fits these results "
                                   f"({'; '.join(skipped) or 'nothing to draw'})")
        for f in written:
            target = os.path.join(out, os.path.basename(f))
            os.replace(f, target)
            print(f"wrote {target}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="figures: " + ", ".join(f["name"] for f in FIGURES))
    p.add_argument("path", nargs="?", metavar="PATH",
                   help="a results file or folder: draw the figures that fit each results "
                   "file in it (named <file>-<figure>) instead of the paper figures")
    p.add_argument("--results", default="results", help="results directory (default: results)")
    p.add_argument("--out", default="figures", help="output directory (default: figures)")
    p.add_argument("--only", action="append", metavar="NAME",
                   help="draw only this figure (repeatable)")
    p.add_argument("--skip-missing", action="store_true",
                   help="skip figures whose input file is missing instead of failing")
    p.add_argument("--specs", help="claim specs whose published values the figures overlay "
                   "(default: ./experiments/paper, else the source tree's)")
    a = p.parse_args()
    if a.path is not None:
        if a.only or a.skip_missing:
            raise common.PlotError("--only and --skip-missing select paper figures; with a "
                                   "PATH every figure that fits is drawn")
        draw_each_file(a.path, a.out, a.specs)
        return
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
        tasks = []
        for i, fig in enumerate(figures, 1):
            print(f"[plots] {i}/{len(figures)} {fig['name']} <- "
                  f"{os.path.join(a.results, fig['input'])}", file=sys.stderr)
            options = dict(fig["options"])
            if a.specs and fig["script"] in ("speedup", "volume"):
                options["specs_dir"] = a.specs
            tasks.append((fig["script"], (a.results, staging),
                          dict(name=fig["name"], input=fig["input"], **options)))
        written = []
        for fig, (files, error) in zip(figures, map(_draw, tasks)):
            if error:
                raise common.PlotError(error)
            written += files
        for f in written:
            target = os.path.join(a.out, os.path.basename(f))
            os.replace(f, target)
            print(f"wrote {target}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)


if __name__ == "__main__":
    common.run_main(main)
