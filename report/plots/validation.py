#!/usr/bin/python3
"""Measured against simulated time, log-log, from a clbo.validate/1 results file: one point
per case (collectives by op, optimizer steps), filled when bandwidth-bound, half-filled when
compute-bound and hollow when latency-bound, with the y = x line and the ±15% band.

    python3 report/plots/validation.py --results results --out figures \
        [--input validation/full.json] [--name validation]
"""
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402  (must come first: the matplotlib guard)

BAND = 0.15


def case_label(case):
    op = case.get("op")
    if op == "step":
        return "optimizer step"
    algo = case.get("algo")
    return f"{op} ({algo})" if algo else op


def plot(results_dir, out_dir, name="validation", input="validation/full.json"):
    path = os.path.join(results_dir, input)
    doc = common.load_results(path, ["clbo.validate/1"])
    cases = doc.get("cases")
    if not isinstance(cases, list) or not cases:
        raise common.PlotError(f"{path}: corrupt results file, 'cases' is missing or empty")
    # Wide enough for the legend band: up to six columns of op labels above the panel.
    fig, axes = common.new_figure(1, 1, size=(10.0, 7.5))
    ax = axes[0][0]
    style = common.Styler()
    lo, hi = float("inf"), 0.0
    series = {}
    for i, c in enumerate(cases):
        m = common.field(c, path, "measured_s", f"cases[{i}]")
        s = common.field(c, path, "simulated_s", f"cases[{i}]")
        if m <= 0 or s <= 0:
            raise common.PlotError(f"{path}: cases[{i}] has a non-positive time")
        series.setdefault(case_label(c), []).append((m, s, c.get("bound", "bandwidth")))
        lo, hi = min(lo, m, s), max(hi, m, s)
    lo, hi = lo / 1.5, hi * 1.5
    xs = [lo, hi]
    ax.fill_between(xs, [x * (1 - BAND) for x in xs], [x * (1 + BAND) for x in xs],
                    color="#e6e6e6", label=f"±{int(BAND * 100)}%", zorder=0)
    ax.plot(xs, xs, color="black", linewidth=1.0, linestyle="-", label="simulated = measured",
            zorder=1)
    for label, points in series.items():
        st = style(label)
        kw = common.line_kwargs(st)
        labelled = False
        for bound, fill in (("bandwidth", "full"), ("compute", "left"), ("latency", "none")):
            pts = [(m, s) for m, s, b in points if b == bound]
            if not pts:
                continue
            ax.plot([p[0] for p in pts], [p[1] for p in pts], linestyle="none",
                    marker=kw["marker"], color=kw["color"], markeredgecolor=kw["color"],
                    fillstyle=fill, markerfacecolor=kw["color"] if fill != "none" else "none",
                    markersize=7, label=None if labelled else label, zorder=2)
            labelled = True
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    ax.set_xlabel("measured on the emulated cluster (s, log scale)")
    ax.set_ylabel("simulated on its generated preset (s, log scale)")
    summary = doc.get("summary", {})
    med, mx = summary.get("median_abs_rel_error"), summary.get("max_abs_rel_error")
    title = "clbo simulate vs the emulated TCP cluster"
    if common.finite(med) and common.finite(mx):
        title += f"\nbandwidth-bound: median |error| {100 * med:.1f}%, max {100 * mx:.1f}%"
    ax.set_title(title + "\n(filled: bandwidth-bound, half: compute-bound, hollow: latency-bound)")
    return common.finish_figure(fig, [ax], results_dir, [(path, doc)], out_dir, name)


def main():
    a = common.standard_args(__doc__.split("\n")[0], None, "validation/full.json",
                             "clbo.validate/1", "validation").parse_args()
    for f in plot(a.results, a.out, a.name, a.input):
        print(f"wrote {f}")


if __name__ == "__main__":
    common.run_main(main)
