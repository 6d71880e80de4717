#!/usr/bin/python3
"""Bars of bytes sent per GPU over the whole run, one bar per optimizer, at one cluster and
GPU count, each compressed optimizer annotated with its reduction factor against its named
baseline (simulated.volume_reduction), from a clbo.simulate/1 results file; where a paper
claim gives the reduction of that very simulation (published.py), its published value is
written under clbo's.

    python3 report/plots/volume.py --results results --out figures \
        [--input sim/fabrics-optimizers.json] [--cluster paper-ib-v100] [--gpus 64]
"""
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402  (must come first: the matplotlib guard)
import published  # noqa: E402


def pick_setting(runs, path, cluster, gpus):
    """The (cluster, GPUs) to show: as given, else the file's first cluster and its largest
    GPU count (the volume per GPU barely depends on the cluster, only on p and the
    algorithm)."""
    cluster = cluster if cluster is not None else runs[0]["cluster"]
    in_cluster = common.select_runs(runs, path, cluster=cluster)
    if gpus is None:
        gpus = max(r["gpus"] for r in in_cluster)
    return cluster, gpus, common.select_runs(in_cluster, path, gpus=gpus)


def plot(results_dir, out_dir, name="volume", input="sim/fabrics-optimizers.json",
         cluster=None, gpus=None, specs_dir=None):
    path = os.path.join(results_dir, input)
    doc = common.load_results(path, ["clbo.simulate/1"])
    runs = common.sim_runs(doc, path)
    cluster, gpus, chosen = pick_setting(runs, path, cluster, gpus)
    marks = published.points(published.load_specs(specs_dir or published.default_specs_dir()),
                             os.path.splitext(input)[0], doc, "simulated.volume_reduction")
    extra = common.series_key_fields(chosen)
    labels = [common.series_label(r, extra) for r in chosen]
    if len(set(labels)) != len(labels):
        raise common.PlotError(f"{path}: several runs per optimizer at {cluster}, {gpus} GPUs")
    tb = [common.field(r, path, "simulated.total_bytes_per_gpu", f"run {l}") / 1e12
          for r, l in zip(chosen, labels)]
    fig, axes = common.new_figure(1, 1, size=(max(6.5, common.bar_panel_width(len(chosen))),
                                              4.8))
    ax = axes[0][0]
    style = common.Styler()
    xs = list(range(len(chosen)))
    # One style per optimizer: variants (batch sizes ...) are told apart by their labels.
    for x, run, value in zip(xs, chosen, tb):
        ax.bar(x, value, width=0.65, **common.bar_kwargs(style(str(run["optimizer"]))))
    top = max(tb)
    for x, run, value in zip(xs, chosen, tb):
        text = f"{value:.3g} TB"
        if run.get("baseline"):
            factor = common.field(run, path, "simulated.volume_reduction", "run")
            text += f"\n{factor:.3g}x less\nthan {run['baseline']}"
            for m in marks:
                if published.matches(m.get("where", {"_": None}), run):
                    text += f"\npublished:\n{m['label'].split(': ', 1)[1]}"
        ax.annotate(text, xy=(x, value), xytext=(0, 3), textcoords="offset points",
                    ha="center", va="bottom", fontsize=8)
    ax.set_ylim(0, top * (1.45 if marks else 1.3))
    common.bar_tick_labels(ax, xs, labels)
    ax.grid(axis="x", visible=False)
    ax.set_axisbelow(True)
    ax.set_ylabel("bytes sent per GPU, whole run (TB = 1e12 B)")
    steps = chosen[0].get("total_steps")
    ax.set_title(f"{common.cluster_title(doc, cluster)}\n{gpus} GPUs"
                 + (f", {steps} training steps" if steps else ""))
    return common.finish_figure(fig, None, results_dir, [(path, doc)], out_dir, name)


def main():
    def extra(p):
        p.add_argument("--cluster", help="cluster (default: the file's first)")
        p.add_argument("--gpus", type=int, help="GPU count (default: the largest)")
        p.add_argument("--specs", help="claim specs with the published values (default: "
                       "experiments/paper)")
    a = common.standard_args(__doc__.split("\n")[0], extra, "sim/fabrics-optimizers.json",
                             "clbo.simulate/1", "volume").parse_args()
    for f in plot(a.results, a.out, a.name, a.input, a.cluster, a.gpus, a.specs):
        print(f"wrote {f}")


if __name__ == "__main__":
    common.run_main(main)
