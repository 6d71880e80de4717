#!/usr/bin/python3
"""Collective benchmark sweep from a clbo.bench.collectives/1 file (`clbo bench collectives
-o`): time per call and bus bandwidth against message size, log-log, one line per op,
algorithm and data type, as nccl-tests' columns report them (time_us, busbw_GBps; a row
that splits out-of-place and in-place halves is read from its out-of-place half).

    python3 report/plots/collectives.py --results results --out figures \
        --input bench/collectives-local-compressed.json [--name collectives]
"""
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402  (must come first: the matplotlib guard)


def number(row, keys):
    """The first of `keys` (dotted) the row has as a finite number, else None."""
    for key in keys:
        value = row
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if common.finite(value):
            return float(value)
    return None


def series_of(doc, path):
    rows = doc.get("rows")
    if not isinstance(rows, list) or not rows:
        raise common.PlotError(f"{path}: corrupt results file, 'rows' is missing or empty")
    series = {}
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise common.PlotError(f"{path}: rows[{i}] is not an object")
        size = number(row, ("size_bytes", "size"))
        time = number(row, ("time_us", "out_of_place.time_us", "out_of_place.time"))
        busbw = number(row, ("busbw_GBps", "out_of_place.busbw_GBps", "out_of_place.busbw"))
        if size is None or time is None or size <= 0 or time <= 0:
            raise common.PlotError(f"{path}: rows[{i}] has no positive size_bytes and time_us")
        label = " ".join(str(row[k]) for k in ("op", "algorithm", "type") if row.get(k))
        series.setdefault(label or "collective", []).append((size, time, busbw))
    return series


def plot(results_dir, out_dir, name="collectives", input="bench/collectives-local-compressed.json"):
    path = os.path.join(results_dir, input)
    doc = common.load_results(path, ["clbo.bench.collectives/1"])
    series = series_of(doc, path)
    fig, axes = common.new_figure(1, 2, size=(11.0, 4.6))
    time_ax, bw_ax = axes[0]
    style = common.Styler()
    for label, points in series.items():
        points.sort()
        kw = dict(common.line_kwargs(style(label)), markersize=5)
        time_ax.plot([p[0] for p in points], [p[1] for p in points], label=label, **kw)
        bw = [(s, b) for s, _, b in points if b is not None and b > 0]
        if bw:
            bw_ax.plot([p[0] for p in bw], [p[1] for p in bw], label=label, **kw)
    sizes = sorted({p[0] for points in series.values() for p in points})
    for ax in (time_ax, bw_ax):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        # Ticks at the measured sizes, thinned to at most eight.
        step = max(1, (len(sizes) + 7) // 8)
        ax.set_xticks(sizes[::step])
        ax.set_xticklabels([common.size_text(s) + "B" for s in sizes[::step]], fontsize=8)
        ax.xaxis.set_minor_locator(common.matplotlib.ticker.NullLocator())
        if len(sizes) == 1:
            ax.set_xlim(sizes[0] / 2, sizes[0] * 2)
        common.log_axis_labels(ax.yaxis)
        ax.set_xlabel("message size (bytes, log2 scale)")
    time_ax.set_ylabel("time per call (µs, log scale)")
    bw_ax.set_ylabel("bus bandwidth (GB/s, log scale)")
    backend = doc.get("backend") or {}
    config = doc.get("config") or {}
    where = ", ".join(p for p in (str(backend.get("name") or config.get("backend") or ""),
                                  f"p = {backend.get('p') or config.get('p')}"
                                  if backend.get("p") or config.get("p") else "") if p)
    time_ax.set_title(f"time per call ({where})" if where else "time per call")
    bw_ax.set_title("bus bandwidth (nccl-tests busbw; compressed: wire bytes / time)",
                    fontsize=10)
    return common.finish_figure(fig, [time_ax], results_dir, [(path, doc)], out_dir, name)


def main():
    a = common.standard_args(__doc__.split("\n")[0], None,
                             "bench/collectives-local-compressed.json",
                             "clbo.bench.collectives/1", "collectives").parse_args()
    for f in plot(a.results, a.out, a.name, a.input):
        print(f"wrote {f}")


if __name__ == "__main__":
    common.run_main(main)
