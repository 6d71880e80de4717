#!/usr/bin/python3
"""Convergence curves from a clbo.train/1 results file: training loss and test accuracy
against samples seen, one line per run label (mean over seeds, band from the seeds' min to
max). A label whose seeds stopped early (NaN loss) is drawn up to its shortest seed and
ends in a cross; its legend entry says how many seeds diverged.

    python3 report/plots/convergence.py --results results --out figures \
        [--input convergence/adam_family.json] [--name convergence-adam_family]
"""
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402  (must come first: the matplotlib guard)


def numbers(values, path, where):
    if not isinstance(values, list) or not all(common.finite(v) for v in values):
        raise common.PlotError(f"{path}: {where} is not a list of finite numbers")
    return [float(v) for v in values]


def seed_curves(doc, path):
    """{label: [run, ...]} in the file's order, each run checked for the fields we read."""
    runs = doc.get("runs")
    if not isinstance(runs, list) or not runs:
        raise common.PlotError(f"{path}: corrupt results file, 'runs' is missing or empty")
    out = {}
    for i, run in enumerate(runs):
        if not isinstance(run, dict) or "label" not in run:
            raise common.PlotError(f"{path}: runs[{i}] has no field 'label'")
        where = f"runs[{i}] ({run['label']}, seed {run.get('seed')})"
        run["_loss"] = numbers(run.get("train_loss"), path, f"{where} train_loss")
        evals = run.get("eval")
        if not isinstance(evals, list):
            raise common.PlotError(f"{path}: {where} has no 'eval' list")
        run["_eval"] = [(common.field(e, path, "step", f"{where} eval"),
                         common.field(e, path, "test_accuracy", f"{where} eval"))
                        for e in evals]
        out.setdefault(run["label"], []).append(run)
    return out


def mean_band(curves):
    """Pointwise mean, min and max over the common prefix of equally spaced curves."""
    n = min(len(c) for c in curves)
    cols = [[c[i] for c in curves] for i in range(n)]
    return ([sum(col) / len(col) for col in cols], [min(col) for col in cols],
            [max(col) for col in cols])


def plot(results_dir, out_dir, name="convergence", input="convergence/adam_family.json"):
    path = os.path.join(results_dir, input)
    doc = common.load_results(path, ["clbo.train/1"])
    batch = common.field(doc, path, "resolved.batch_size", "file")
    labels = seed_curves(doc, path)
    fig, axes = common.new_figure(1, 2, size=(11.0, 4.9))
    loss_ax, acc_ax = axes[0]
    style = common.Styler()
    ends, loss_top, loss_bottom = [], 0.0, float("inf")
    for label, runs in labels.items():
        st = style(label)
        kw = common.line_kwargs(st)
        kw.update(marker=None, linewidth=1.4)
        stopped = [r for r in runs if r.get("status") != "complete"]
        legend = f"{label} ({len(runs)} seeds" + (
            f"; {len(stopped)} stopped: {', '.join(sorted({str(r.get('status')) for r in stopped}))}"
            if stopped else "") + ")"
        # train_loss[i] is the loss of step i+1's batch, before its update: i batches seen.
        mean, lo, hi = mean_band([r["_loss"] for r in runs])
        xs = [i * batch for i in range(len(mean))]
        loss_ax.fill_between(xs, lo, hi, color=st["color"], alpha=0.18, linewidth=0,
                             hatch=st["hatch"] or None)
        loss_ax.plot(xs, mean, label=legend, **kw)
        # Test accuracy after step s: s batches seen. Seeds share the eval steps until the
        # shortest one stops.
        steps = [[s for s, _ in r["_eval"]] for r in runs]
        n = min(len(s) for s in steps)
        if n:
            if any(s[:n] != steps[0][:n] for s in steps):
                raise common.PlotError(f"{path}: label '{label}': seeds were evaluated at "
                                       "different steps")
            amean, alo, ahi = mean_band([[a * 100 for _, a in r["_eval"]] for r in runs])
            axs = [s * batch for s in steps[0][:n]]
            acc_ax.fill_between(axs, alo, ahi, color=st["color"], alpha=0.18, linewidth=0)
            acc_ax.plot(axs, amean, label=legend, **dict(common.line_kwargs(st), markersize=5))
        if stopped:
            ends.append((st, xs[-1], mean[-1], axs[-1] if n else None, amean[-1] if n else None))
        if not stopped:
            loss_top = max(loss_top, max(hi))
            loss_bottom = min(loss_bottom, min(lo))
    # A diverging label would squash every other curve: the loss axis covers the labels
    # that completed, and a diverged curve leaves through the top, its cross pinned there.
    loss_ax.set_yscale("log")
    if loss_top > 0:
        loss_ax.set_ylim(loss_bottom / 1.3, loss_top * 2.0)
    top = loss_ax.get_ylim()[1] if loss_top > 0 else None
    for st, x, y, ax_x, ax_y in ends:
        shown = min(y, top / 1.15) if top else y
        loss_ax.plot([x], [shown], marker="x", markersize=11, markeredgewidth=2.2,
                     color=st["color"], linestyle="none")
        if top and y > top:
            loss_ax.annotate(f"NaN after {y:.2g}", xy=(x, shown), xytext=(6, -4),
                             textcoords="offset points", fontsize=8, va="top")
        if ax_x is not None:
            acc_ax.plot([ax_x], [ax_y], marker="x", markersize=11, markeredgewidth=2.2,
                        color=st["color"], linestyle="none")
    loss_ax.yaxis.set_major_locator(common.matplotlib.ticker.LogLocator(base=10,
                                                                        subs=(1.0, 2.0, 3.0, 5.0)))
    loss_ax.yaxis.set_major_formatter(common.matplotlib.ticker.FormatStrFormatter("%g"))
    loss_ax.yaxis.set_minor_formatter(common.matplotlib.ticker.NullFormatter())
    loss_ax.set_ylabel("training loss (cross-entropy, log scale)")
    acc_ax.set_ylabel("test accuracy (%)")
    model = (doc.get("resolved") or {}).get("model", "?")
    for ax, title in ((loss_ax, f"training loss, model {model} (global batch, before the step)"),
                      (acc_ax, "test accuracy (the kept parameters)")):
        ax.set_xlabel(f"samples seen (batch {batch:.0f})")
        ax.xaxis.set_major_formatter(common.matplotlib.ticker.FuncFormatter(
            common.count_formatter))
        ax.set_title(title)
    return common.finish_figure(fig, [acc_ax], results_dir, [(path, doc)], out_dir, name,
                                legend_title="mean over seeds; band: min to max; "
                                "x: the seeds stopped (NaN loss)")


def main():
    a = common.standard_args(__doc__.split("\n")[0], None, "convergence/adam_family.json",
                             "clbo.train/1", "convergence").parse_args()
    for f in plot(a.results, a.out, a.name, a.input):
        print(f"wrote {f}")


if __name__ == "__main__":
    common.run_main(main)
