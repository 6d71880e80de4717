#!/usr/bin/python3
"""Speedup over each run's named baseline (simulated.speedup: the baseline's end-to-end time
over the optimizer's) against GPUs on a log2 axis: one panel per cluster, one line per
compressed optimizer, from a clbo.simulate/1 results file. The papers' published speedups
for the same simulation (claims of experiments/paper/*.json, see published.py) are drawn
beside the curves as white stars, "up to" claims as dotted levels.

    python3 report/plots/speedup.py --results results --out figures \
        [--input sim/fabrics-optimizers.json] [--name speedup] [--cluster C ...]
"""
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402  (must come first: the matplotlib guard)
import published  # noqa: E402


def plot(results_dir, out_dir, name="speedup", input="sim/fabrics-optimizers.json",
         clusters=None, optimizers=None, specs_dir=None):
    path = os.path.join(results_dir, input)
    doc = common.load_results(path, ["clbo.simulate/1"])
    runs = common.sim_runs(doc, path)
    panels = common.scaling_series(runs, path, clusters, optimizers, only_with_baseline=True)
    if not panels:
        raise common.PlotError(f"{path}: no run names a baseline, so there is no speedup to plot")
    marks = published.points(published.load_specs(specs_dir or published.default_specs_dir()),
                             os.path.splitext(input)[0], doc, "simulated.speedup")
    extra = common.series_key_fields(runs)
    fig, axes = common.panel_grid(len(panels))
    style = common.Styler()
    for ax, (cluster, series) in zip(axes, panels.items()):
        gpus, top = set(), 1.0
        for m in marks:
            top = max(top, m["value"])
        for label, rs in series.items():
            xs = [r["gpus"] for r in rs]
            ys = [common.field(r, path, "simulated.speedup", f"run {label} @ {r['gpus']}")
                  for r in rs]
            gpus.update(xs)
            top = max(top, *ys)
            baselines = sorted({str(r["baseline"]) for r in rs})
            ax.plot(xs, ys, label=f"{label} vs {' / '.join(baselines)}",
                    **common.line_kwargs(style(label)))
        published.draw_on_panel(
            ax, marks, cluster,
            lambda r: common.series_label(r, extra) if r.get("baseline") else None, runs, style)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.annotate("baseline = 1", xy=(0.99, 1.0), xycoords=("axes fraction", "data"),
                    xytext=(0, -3), textcoords="offset points", fontsize=8, ha="right",
                    va="top")
        common.log2_gpu_axis(ax, gpus)
        ax.set_ylim(0, top * 1.12)
        ax.set_ylabel("speedup over baseline (x)")
        ax.set_title(common.cluster_title(doc, cluster))
    # Published marks add long legend entries: two columns keep the band inside the figure.
    return common.finish_figure(fig, axes, results_dir, [(path, doc)], out_dir, name,
                                legend_columns=(1 if len(axes) == 1 else 2) if marks else None)


def main():
    def extra(p):
        p.add_argument("--cluster", action="append", help="only this cluster (repeatable)")
        p.add_argument("--optimizer", action="append", help="only this optimizer (repeatable)")
        p.add_argument("--specs", help="claim specs with the published values (default: "
                       "experiments/paper)")
    a = common.standard_args(__doc__.split("\n")[0], extra, "sim/fabrics-optimizers.json",
                             "clbo.simulate/1", "speedup").parse_args()
    for f in plot(a.results, a.out, a.name, a.input, a.cluster, a.optimizer, a.specs):
        print(f"wrote {f}")


if __name__ == "__main__":
    common.run_main(main)
