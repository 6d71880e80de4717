#!/usr/bin/python3
"""Published against simulated step times, from a clbo.simulate/1 file whose runs carry the
published values of their row ("paper", written by `clbo simulate` from the spec's
rows[].paper: Table 1 of the 1-bit Adam paper in experiments/sim/table1-calibration.json):
one panel per cluster, for each row a published bar (hatched) beside the simulated one,
each stacked as allreduce (communication) under compute (forward, backward, optimizer),
with the simulated allreduce's and step's error against the published ones above.

    python3 report/plots/calibration.py --results results --out figures \
        [--input sim/table1-calibration.json] [--name calibration-table1]
"""
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402  (must come first: the matplotlib guard)

# (published key, simulated key under step_kinds[0].simulated, legend label)
SEGMENTS = [
    ("allreduce_ms", "comm_ms", "allreduce (exposed communication)"),
    ("compute_ms", "compute_ms", "compute (forward, backward, optimizer)"),
]
COMPUTE_PARTS = ("fwd_ms", "bwd_ms", "optimizer_ms")


def published_rows(doc, path):
    """The runs that carry published values, each checked for what the figure reads."""
    runs = [r for r in common.sim_runs(doc, path) if isinstance(r.get("paper"), dict)]
    if not runs:
        raise common.PlotError(f"{path}: no run carries published values ('paper'); only "
                               "simulations of a spec with rows[].paper have them")
    rows = []
    for r in runs:
        where = f"run {r['optimizer']} ({r['cluster']}, {r['gpus']} GPUs, batch " \
                f"{r.get('batch_size')})"
        paper = r["paper"]
        if not all(common.finite(paper.get(k)) for k in ("allreduce_ms",) + COMPUTE_PARTS):
            raise common.PlotError(f"{path}: {where}: 'paper' needs allreduce_ms, fwd_ms, "
                                   "bwd_ms and optimizer_ms")
        kinds = r.get("step_kinds")
        if not isinstance(kinds, list) or len(kinds) != 1:
            raise common.PlotError(f"{path}: {where} has not exactly one step kind (published "
                                   "rows are single-kind settings)")
        sim = {k: common.field(kinds[0], path, f"simulated.{k}", where)
               for k in ("comm_ms", "compute_ms", "time_ms")}
        published = {"allreduce_ms": float(paper["allreduce_ms"]),
                     "compute_ms": sum(float(paper[k]) for k in COMPUTE_PARTS)}
        published["step_ms"] = published["allreduce_ms"] + published["compute_ms"]
        rows.append((r, published, sim))
    return rows


def row_label(run):
    micro = run.get("micro_batch")
    return (f"{run['gpus']} GPUs\nbatch {run.get('batch_size')}"
            + (f"\n{micro}/GPU" if micro is not None else "")
            + (f", acc {run['grad_acc']}" if run.get("grad_acc", 1) != 1 else ""))


def pct(sim, paper):
    text = f"{100 * (sim - paper) / paper:+.1f}%"
    return "0.0%" if text in ("+0.0%", "-0.0%") else text


def plot(results_dir, out_dir, name="calibration-table1", input="sim/table1-calibration.json"):
    path = os.path.join(results_dir, input)
    doc = common.load_results(path, ["clbo.simulate/1"])
    rows = published_rows(doc, path)
    clusters = common.unique_in_order([r["cluster"] for r, _, _ in rows])
    widest = max(sum(1 for r, _, _ in rows if r["cluster"] == c) for c in clusters)
    fig, axes = common.new_figure(len(clusters), 1,
                                  size=(max(8.0, 1.35 * widest + 1.5), 3.9 * len(clusters) + 1.2))
    drawn = []
    for ax, cluster in zip([row[0] for row in axes], clusters):
        mine = [row for row in rows if row[0]["cluster"] == cluster]
        xs = list(range(len(mine)))
        width = 0.38
        top = 0.0
        for offset, source in ((-width / 2, "published"), (width / 2, "simulated")):
            bottom = [0.0] * len(mine)
            for (paper_key, sim_key, text), grey in zip(SEGMENTS, ("#505050", "#c8c8c8")):
                heights = [(p[paper_key] if source == "published" else s[sim_key])
                           for _, p, s in mine]
                # Segments differ by grey level; published bars alone are hatched, so the
                # pairs read in greyscale too.
                style = dict(facecolor=grey, edgecolor="black",
                             hatch="////" if source == "published" else "")
                ax.bar([x + offset for x in xs], heights, bottom=bottom, width=width,
                       linewidth=0.8, label=f"{text}, {source}", **style)
                bottom = [b + h for b, h in zip(bottom, heights)]
            top = max(top, *bottom)
        for x, (run, p, s) in zip(xs, mine):
            ax.annotate(f"allreduce {pct(s['comm_ms'], p['allreduce_ms'])}\n"
                        f"step {pct(s['time_ms'], p['step_ms'])}",
                        xy=(x + width / 2, s["time_ms"]), xytext=(0, 3),
                        textcoords="offset points", ha="center", va="bottom", fontsize=7)
        ax.set_ylim(0, top * 1.25)
        ax.set_xticks(xs)
        ax.set_xticklabels([row_label(r) for r, _, _ in mine], fontsize=8)
        ax.grid(axis="x", visible=False)
        ax.set_axisbelow(True)
        ax.set_ylabel("time per step (ms)")
        ax.set_title(f"{common.cluster_title(doc, cluster)}: left bar published (hatched), "
                     "right bar simulated", fontsize=10)
        drawn.append(ax)
    sources = sorted({str(r["paper"].get("source", "")).split(",")[0] for r, _, _ in rows} - {""})
    title = "published vs simulated step time" + (f" ({'; '.join(sources)})" if sources else "")
    return common.finish_figure(fig, drawn[:1], results_dir, [(path, doc)], out_dir, name,
                                legend_title=title, legend_columns=2)


def main():
    a = common.standard_args(__doc__.split("\n")[0], None, "sim/table1-calibration.json",
                             "clbo.simulate/1", "calibration-table1").parse_args()
    for f in plot(a.results, a.out, a.name, a.input):
        print(f"wrote {f}")


if __name__ == "__main__":
    common.run_main(main)
