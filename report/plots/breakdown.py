#!/usr/bin/python3
"""Stacked step-time breakdown of the average training step (compute, compression kernels,
exposed communication) per optimizer, one panel per cluster at one GPU count, from a
clbo.simulate/1 results file. Each run's step kinds (warmup, compression, local, sync, ...)
are weighted by their step counts, so the bar is the mean step over the whole run.

    python3 report/plots/breakdown.py --results results --out figures \
        [--input sim/fabrics-optimizers.json] [--gpus 64] [--cluster C ...]
"""
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402  (must come first: the matplotlib guard)

# (results field under step_kinds[i].simulated, legend label); time_ms is their sum.
SEGMENTS = [
    ("compute_ms", "compute (forward, backward, optimizer)"),
    ("compression_ms", "compression kernels"),
    ("comm_ms", "communication (exposed)"),
]


def average_step(run, path, where):
    """{segment field: mean ms per step} over the run, step kinds weighted by count."""
    kinds = run.get("step_kinds")
    if not isinstance(kinds, list) or not kinds:
        raise common.PlotError(f"{path}: {where} has no step_kinds")
    total_steps = sum(common.field(k, path, "count", f"{where} step kind") for k in kinds)
    if total_steps <= 0:
        raise common.PlotError(f"{path}: {where} step kinds count no steps")
    return {key: sum(common.field(k, path, "count", where) *
                     common.field(k, path, f"simulated.{key}", f"{where} step kind")
                     for k in kinds) / total_steps for key, _ in SEGMENTS}


def plot(results_dir, out_dir, name="breakdown", input="sim/fabrics-optimizers.json",
         clusters=None, gpus=None):
    path = os.path.join(results_dir, input)
    doc = common.load_results(path, ["clbo.simulate/1"])
    runs = common.sim_runs(doc, path)
    if clusters is None:
        clusters = common.unique_in_order([r["cluster"] for r in runs])
    panels = []
    for cluster in clusters:
        in_cluster = common.select_runs(runs, path, cluster=cluster)
        at = gpus if gpus is not None else max(r["gpus"] for r in in_cluster)
        panels.append((cluster, at, common.select_runs(in_cluster, path, gpus=at)))
    widest = max(len(chosen) for _, _, chosen in panels)
    fig, axes = common.panel_grid(len(panels),
                                  panel_size=(common.bar_panel_width(widest), 3.9))
    for ax, (cluster, at, chosen) in zip(axes, panels):
        extra = common.series_key_fields(chosen)
        labels = [common.series_label(r, extra) for r in chosen]
        steps = [average_step(r, path, f"run {l} ({cluster}, {at} GPUs)")
                 for r, l in zip(chosen, labels)]
        xs = list(range(len(chosen)))
        bottom = [0.0] * len(chosen)
        for (key, text), seg_style in zip(SEGMENTS, common.SEGMENT_STYLES):
            heights = [s[key] for s in steps]
            ax.bar(xs, heights, bottom=bottom, width=0.65, label=text, linewidth=0.8,
                   **seg_style)
            bottom = [b + h for b, h in zip(bottom, heights)]
        for x, total in zip(xs, bottom):
            ax.annotate(f"{total:.0f}", xy=(x, total), xytext=(0, 2), textcoords="offset points",
                        ha="center", va="bottom", fontsize=8)
        ax.set_ylim(0, max(bottom) * 1.15)
        common.bar_tick_labels(ax, xs, labels)
        ax.grid(axis="x", visible=False)
        ax.set_axisbelow(True)
        ax.set_ylabel("average step time (ms)")
        ax.set_title(f"{common.cluster_title(doc, cluster)}; {at} GPUs", fontsize=10)
    return common.finish_figure(fig, axes, results_dir, [(path, doc)], out_dir, name)


def main():
    def extra(p):
        p.add_argument("--cluster", action="append",
                       help="panel for this cluster (repeatable; default: every cluster)")
        p.add_argument("--gpus", type=int, help="GPU count (default: each cluster's largest)")
    a = common.standard_args(__doc__.split("\n")[0], extra, "sim/fabrics-optimizers.json",
                             "clbo.simulate/1", "breakdown").parse_args()
    for f in plot(a.results, a.out, a.name, a.input, a.cluster, a.gpus):
        print(f"wrote {f}")


if __name__ == "__main__":
    common.run_main(main)
