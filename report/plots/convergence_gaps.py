#!/usr/bin/python3
"""Convergence gaps under several experiment designs: for each compressed optimizer, its gap
to its baseline in final test accuracy (points) and in training-set loss (cross-entropy),
one bar per design (the mean over seeds) with every seed's paired gap as a dot,
and the target band of +-0.5 points shaded. The designs are clbo.train/1 files that run the
same labels: by default the families' recipe, twice the steps and shifted training images
(docs/convergence.md, "Without overfitting").

    python3 report/plots/convergence_gaps.py --results results --out figures \
        [--name convergence-gaps]
"""
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402  (must come first: the matplotlib guard)

# (design, [results files under --results, one per family]); the first file of the first
# design is the figure's `input` in plot_all.FIGURES.
DESIGNS = [
    ("the families' recipe (512 / 501 steps)",
     ["convergence/adam_family.json", "convergence/lamb_family.json"]),
    ("twice the steps", ["convergence/adam_family_2x.json", "convergence/lamb_family_2x.json"]),
    ("shifted training images",
     ["convergence/adam_family_shifted.json", "convergence/lamb_family_shifted.json"]),
]
TARGET_POINTS = 0.5


def paired_gaps(doc, path):
    """{label: (baseline label, [(accuracy gap in points, training-set loss gap)])}
    over the seeds both runs completed, in the file's order of labels."""
    runs = doc.get("runs")
    if not isinstance(runs, list) or not runs:
        raise common.PlotError(f"{path}: corrupt results file, 'runs' is missing or empty")
    by_key, order = {}, []
    for i, run in enumerate(runs):
        if not isinstance(run, dict) or "label" not in run or "seed" not in run:
            raise common.PlotError(f"{path}: runs[{i}] has no 'label' or 'seed'")
        by_key[(run["label"], run["seed"])] = run
        if run["label"] not in order:
            order.append(run["label"])
    out = {}
    for label in order:
        seeds = [s for (l, s) in by_key if l == label]
        base = by_key[(label, seeds[0])].get("baseline")
        if not base:
            continue
        pairs = []
        for seed in seeds:
            run, ref = by_key[(label, seed)], by_key.get((base, seed))
            if ref is None or run.get("status") != "complete" or ref.get("status") != "complete":
                continue
            where = f"runs ({label}, seed {seed})"
            acc = common.field(run, path, "final_test_accuracy", where)
            ref_acc = common.field(ref, path, "final_test_accuracy", where)
            loss = common.field(run, path, "final_train_set_loss", where)
            ref_loss = common.field(ref, path, "final_train_set_loss", where)
            if not all(common.finite(v) for v in (acc, ref_acc, loss, ref_loss)):
                raise common.PlotError(f"{path}: {where}: accuracy or training-set loss is "
                                       "not a finite number")
            pairs.append(((acc - ref_acc) * 100.0, loss - ref_loss))
        out[label] = (base, pairs)
    return out


def plot(results_dir, out_dir, name="convergence-gaps", input=DESIGNS[0][1][0], designs=None):
    designs = designs or DESIGNS
    if input != designs[0][1][0]:
        designs = [(designs[0][0], [input] + designs[0][1][1:])] + designs[1:]
    sources, per_design, labels = [], [], []
    for design, files in designs:
        gaps = {}
        for rel in files:
            path = os.path.join(results_dir, rel)
            doc = common.load_results(path, ["clbo.train/1"])
            sources.append((path, doc))
            for label, value in paired_gaps(doc, path).items():
                gaps[label] = value
                if label not in labels:
                    labels.append(label)
        per_design.append((design, gaps))
    # The labels every design ran (the naive schemes and ablations are in one design only).
    shown = [l for l in labels if all(l in g and g[l][1] for _, g in per_design)]
    if not shown:
        raise common.PlotError("no compressed run label is in every design: "
                               + ", ".join(d for d, _ in designs))
    fig, axes = common.new_figure(1, 2, size=(12.0, 4.8))
    acc_ax, loss_ax = axes[0]
    style = common.Styler()
    width = 0.8 / len(per_design)
    for k, (design, gaps) in enumerate(per_design):
        st = style(design)
        xs = [i + (k - (len(per_design) - 1) / 2) * width for i in range(len(shown))]
        for ax, col in ((acc_ax, 0), (loss_ax, 1)):
            means = [sum(p[col] for p in gaps[l][1]) / len(gaps[l][1]) for l in shown]
            ax.bar(xs, means, width * 0.92, label=design if col == 0 else None,
                   **common.bar_kwargs(st))
            for x, l in zip(xs, shown):
                seeds = [p[col] for p in gaps[l][1]]
                # White-filled dots stay visible on dark and light bars alike.
                ax.plot([x] * len(seeds), seeds, linestyle="none", marker="o", markersize=3.6,
                        markerfacecolor="white", markeredgecolor="black", markeredgewidth=0.8)
    acc_ax.axhspan(-TARGET_POINTS, TARGET_POINTS, color="#2a9d8f", alpha=0.12, linewidth=0,
                   label=f"target: within {TARGET_POINTS} points")
    bases = {per_design[0][1][l][0] for l in shown}
    for ax in (acc_ax, loss_ax):
        ax.axhline(0.0, color="black", linewidth=0.8)
        common.bar_tick_labels(ax, list(range(len(shown))), shown)
        ax.grid(axis="x", visible=False)
    acc_ax.set_ylabel("final test accuracy: run - baseline (points)")
    acc_ax.set_title("test accuracy gap, paired by seed")
    loss_ax.set_ylabel("training-set loss: run - baseline (cross-entropy)")
    loss_ax.set_title("training-set loss gap (the fit), paired by seed")
    legend_top = common.figure_legend(fig, [acc_ax], title="bars: mean over seeds; dots: each "
                                      "seed; baselines: " + ", ".join(sorted(bases)))
    return common.save_figure(fig, out_dir, name, compact_caption(results_dir, sources),
                              legend_top=legend_top)


def compact_caption(results_dir, sources):
    """source_caption's text with the files of one folder given once: six full paths do
    not fit under the figure."""
    shown = [common.display_path(p, results_dir) for p, _ in sources]
    folder = os.path.dirname(shown[0])
    kinds = sorted({common.SCHEMAS.get(d.get("schema"), "unknown") for _, d in sources})
    if all(os.path.dirname(s) == folder for s in shown):
        names = ", ".join(os.path.splitext(os.path.basename(s))[0] for s in shown)
        return f"source: {folder}/{{{names}}}.json ({', '.join(kinds)})"
    return common.source_caption(results_dir, sources)


def main():
    a = common.standard_args(__doc__.split("\n")[0], None, DESIGNS[0][1][0], "clbo.train/1",
                             "convergence-gaps").parse_args()
    for f in plot(a.results, a.out, a.name, a.input):
        print(f"wrote {f}")


if __name__ == "__main__":
    common.run_main(main)
