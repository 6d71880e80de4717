#!/usr/bin/python3
"""Throughput (samples/s) against GPUs on a log2 axis: one panel per cluster, one line per
optimizer, from a clbo.simulate/1 results file.

    python3 report/plots/throughput.py --results results --out figures \
        [--input sim/fabrics-optimizers.json] [--name throughput] [--cluster C ...]
"""
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402  (must come first: the matplotlib guard)


def plot(results_dir, out_dir, name="throughput", input="sim/fabrics-optimizers.json",
         clusters=None, optimizers=None):
    path = os.path.join(results_dir, input)
    doc = common.load_results(path, ["clbo.simulate/1"])
    runs = common.sim_runs(doc, path)
    panels = common.scaling_series(runs, path, clusters, optimizers)
    fig, axes = common.panel_grid(len(panels))
    style = common.Styler()
    for ax, (cluster, series) in zip(axes, panels.items()):
        gpus = set()
        for label, rs in series.items():
            xs = [r["gpus"] for r in rs]
            ys = [common.field(r, path, "simulated.samples_per_s", f"run {label} @ {r['gpus']}")
                  for r in rs]
            gpus.update(xs)
            ax.plot(xs, ys, label=label, **common.line_kwargs(style(label)))
        common.log2_gpu_axis(ax, gpus)
        common.log_count_axis(ax)
        ax.set_ylabel("throughput (samples/s, log scale)")
        ax.set_title(common.cluster_title(doc, cluster))
    return common.finish_figure(fig, axes, results_dir, [(path, doc)], out_dir, name)


def main():
    def extra(p):
        p.add_argument("--cluster", action="append", help="only this cluster (repeatable)")
        p.add_argument("--optimizer", action="append", help="only this optimizer (repeatable)")
    a = common.standard_args(__doc__.split("\n")[0], extra, "sim/fabrics-optimizers.json",
                             "clbo.simulate/1", "throughput").parse_args()
    for f in plot(a.results, a.out, a.name, a.input, a.cluster, a.optimizer):
        print(f"wrote {f}")


if __name__ == "__main__":
    common.run_main(main)
