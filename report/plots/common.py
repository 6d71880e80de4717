"""Shared helpers for the figure scripts: loading results files, the matplotlib guard, one
greyscale-readable style, and deterministic saving with a caption naming the sources.

Every script imports this module first, so a missing matplotlib is reported before any
other output (exit 2), and a bad results file is reported as `plots: error: ...` (exit 1).
"""

import json
import math
import os
import sys
import tempfile

MATPLOTLIB_MISSING = ("matplotlib is missing: install the Debian package python3-matplotlib "
                      "(apt-get install python3-matplotlib)")

# Results schemas the figures understand, and how their numbers were produced (for captions).
SCHEMAS = {
    "clbo.simulate/1": "simulated",
    "clbo.train/1": "measured",
    "clbo.bench.collectives/1": "measured",
    "clbo.bench.kernels/1": "measured",
    "clbo.bench.kernels/2": "measured",
    "clbo.validate/1": "measured and simulated",
    "clbo.validate.repeatability/1": "measured and simulated",
    "clbo.demo/1": "measured",
}


def _import_pyplot():
    try:
        import matplotlib
    except ImportError:
        print(MATPLOTLIB_MISSING, file=sys.stderr)
        sys.exit(2)
    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as pyplot
    return matplotlib, pyplot


matplotlib, plt = _import_pyplot()


class PlotError(Exception):
    """A problem with the inputs; the message names the file and what is wrong."""


def run_main(main):
    """Runs a script's main(), turning PlotError into `plots: error: ...` and exit 1."""
    try:
        main()
    except PlotError as e:
        print(f"plots: error: {e}", file=sys.stderr)
        sys.exit(1)


# ---------------------------------------------------------------------------------------
# Loading


def load_results(path, schemas=None):
    """Reads a results JSON file and checks its schema. `schemas` limits the accepted ones
    (a figure needs one kind of data); every file must carry a schema from SCHEMAS."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise PlotError(f"{path}: results file is missing") from None
    except OSError as e:
        raise PlotError(f"{path}: cannot read results file ({e.strerror})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise PlotError(f"{path}: corrupt results file, not valid JSON "
                        f"(line {e.lineno}, column {e.colno}: {e.msg})") from None
    if not isinstance(doc, dict):
        raise PlotError(f"{path}: corrupt results file, the top level is not a JSON object")
    if "schema" not in doc:
        hint = ""
        if "simulate" in doc or "optimizers" in doc:
            hint = "; it looks like an experiment file: `clbo simulate` or `clbo train` it"
        raise PlotError(f"{path}: not a clbo results file: it has no 'schema' field (every "
                        f"clbo result names its own, e.g. clbo.simulate/1; results/SCHEMA.md)"
                        + hint)
    schema = doc.get("schema")
    if schema not in SCHEMAS:
        raise PlotError(f"{path}: unknown results schema {json.dumps(schema)} "
                        f"(supported: {', '.join(sorted(SCHEMAS))})")
    if schemas is not None and schema not in schemas:
        raise PlotError(f"{path}: schema {schema} cannot be used for this figure "
                        f"(expected {' or '.join(schemas)})")
    return doc


KERNEL_BENCH_SCHEMAS = ["clbo.bench.kernels/1", "clbo.bench.kernels/2"]


def kernel_bench(doc):
    """(Google Benchmark JSON, clbo environment) of a `clbo bench kernels` result: /2 is the
    Google Benchmark document itself with clbo's record under context.clbo, /1 wrapped it."""
    if doc.get("schema") == "clbo.bench.kernels/1":
        return doc.get("benchmark") or {}, doc.get("environment") or {}
    clbo = (doc.get("context") or {}).get("clbo") or {}
    return doc, clbo.get("environment") or {}


def field(doc, path, dotted, where="file"):
    """doc's value at a dotted path ("simulated.samples_per_s"); a missing key or a
    non-number is an error naming the results file and the path."""
    value = doc
    for key in dotted.split("."):
        if not isinstance(value, dict) or key not in value:
            raise PlotError(f"{path}: {where} has no field '{dotted}'")
        value = value[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PlotError(f"{path}: {where} field '{dotted}' is {json.dumps(value)}, "
                        "not a number")
    return float(value)


def sim_runs(doc, path):
    runs = doc.get("runs")
    if not isinstance(runs, list) or not runs:
        raise PlotError(f"{path}: corrupt results file, 'runs' is missing or empty")
    for i, run in enumerate(runs):
        for key in ("cluster", "gpus", "optimizer", "simulated"):
            if not isinstance(run, dict) or key not in run:
                raise PlotError(f"{path}: runs[{i}] has no field '{key}'")
    return runs


def select_runs(runs, path, **match):
    """Runs whose top-level fields equal every given value (None values are ignored)."""
    match = {k: v for k, v in match.items() if v is not None}
    chosen = [r for r in runs if all(r.get(k) == v for k, v in match.items())]
    if not chosen:
        have = {k: sorted({json.dumps(r.get(k)) for r in runs}) for k in match}
        listing = "; ".join(f"{k} in [{', '.join(v)}]" for k, v in have.items())
        raise PlotError(f"{path}: no run matches {json.dumps(match)} (the file has {listing})")
    return chosen


def unique_in_order(values):
    seen, out = set(), []
    for v in values:
        key = json.dumps(v, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


def series_key_fields(runs, candidates=("batch_size", "micro_batch", "grad_acc", "backend",
                                       "workload", "implementation")):
    """Fields besides the optimizer that must tell series apart: those that still differ
    between runs of one optimizer on one cluster at one GPU count (e.g. 1-bit LAMB at batch
    8K, 16K, 32K, 64K). A field that changes only with the GPU count (accumulation steps at
    a fixed global batch) is not a key. Earlier candidates win: once the batch size tells
    runs apart, the accumulation steps are not added too."""
    chosen = []
    for f in candidates:
        groups = {}
        for r in runs:
            key = json.dumps([r.get("cluster"), r.get("optimizer"), r.get("gpus")] +
                             [r.get(c) for c in chosen])
            groups.setdefault(key, set()).add(json.dumps(r.get(f)))
        if any(len(v) > 1 for v in groups.values()):
            chosen.append(f)
    return chosen


def series_label(run, extra_fields):
    label = str(run["optimizer"])
    extras = [f"{f.replace('_', ' ')} {run.get(f)}" for f in extra_fields]
    return label + (f" ({', '.join(extras)})" if extras else "")


# ---------------------------------------------------------------------------------------
# Style: every series differs by marker, line style and hatch as well as colour, so the
# figures survive greyscale printing. Colours are the Okabe-Ito colour-blind-safe set.

_STYLES = [
    dict(color="#000000", marker="o", linestyle="-", hatch="", fill=True),
    dict(color="#777777", marker="s", linestyle="--", hatch="..", fill=False),
    dict(color="#0072B2", marker="^", linestyle="-", hatch="//", fill=True),
    dict(color="#D55E00", marker="v", linestyle="-.", hatch="\\\\", fill=True),
    dict(color="#009E73", marker="D", linestyle=":", hatch="xx", fill=True),
    dict(color="#CC79A7", marker="P", linestyle=(0, (5, 1, 1, 1, 1, 1)), hatch="oo",
         fill=False),
    dict(color="#E69F00", marker="*", linestyle=(0, (1, 3)), hatch="++", fill=True),
    dict(color="#56B4E9", marker="X", linestyle=(0, (8, 2)), hatch="--", fill=False),
]
# The paper optimizers keep one style in every figure.
_FIXED = {"Adam": 0, "LAMB": 1, "1-bit Adam": 2, "1-bit LAMB": 3, "0/1 Adam": 4, "SLAMB": 5}


class Styler:
    """Gives each series name a style: the fixed one for a paper optimizer, else the next
    free one in first-come order (deterministic for a given input)."""

    def __init__(self):
        self.assigned = {}

    def __call__(self, name):
        if name not in self.assigned:
            base = name.split(" (")[0]
            used = set(self.assigned.values())
            if base in _FIXED and (name == base or _FIXED[base] not in used):
                index = _FIXED[base]
            else:
                free = [i for i in range(len(_STYLES)) if i not in used
                        and i not in _FIXED.values()] or \
                       [i for i in range(len(_STYLES)) if i not in used] or [len(self.assigned)]
                index = free[0]
            self.assigned[name] = index
        return _STYLES[self.assigned[name] % len(_STYLES)]


def line_kwargs(style):
    # Hollow markers are transparent, so a series drawn on top of another stays visible.
    return dict(color=style["color"], marker=style["marker"], linestyle=style["linestyle"],
                markerfacecolor=style["color"] if style["fill"] else "none",
                markeredgecolor=style["color"], markersize=7 if style["fill"] else 9,
                linewidth=1.6)


def bar_kwargs(style):
    return dict(facecolor=style["color"] if style["fill"] else "white", hatch=style["hatch"],
                edgecolor="black" if style["fill"] else style["color"], linewidth=1.0)


# Segments of a stacked bar: grey levels plus hatches (readable without colour).
SEGMENT_STYLES = [
    dict(facecolor="#404040", hatch="", edgecolor="black"),
    dict(facecolor="#bfbfbf", hatch="//", edgecolor="black"),
    dict(facecolor="white", hatch="xx", edgecolor="black"),
    dict(facecolor="#808080", hatch="..", edgecolor="black"),
]


def apply_style():
    matplotlib.rcParams.update({
        "figure.dpi": 100,
        "savefig.dpi": 120,
        "font.size": 10,
        "axes.titlesize": 11,
        "axes.grid": True,
        "grid.color": "#d0d0d0",
        "grid.linewidth": 0.6,
        "hatch.linewidth": 0.6,
        "legend.fontsize": 9,
        "legend.framealpha": 0.9,
        "svg.hashsalt": "clbo",  # fixed ids: identical SVGs on reruns
        "svg.fonttype": "path",
        "path.simplify": False,
    })


def new_figure(rows=1, cols=1, size=(8.0, 5.0), **kwargs):
    apply_style()
    fig, axes = plt.subplots(rows, cols, figsize=size, squeeze=False, **kwargs)
    return fig, axes


def log2_gpu_axis(ax, gpus):
    """x axis of GPU counts on a log2 scale, ticked at the counts present, as integers."""
    ticks = sorted({int(g) for g in gpus})
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    if len(ticks) > 1:
        ax.set_xlim(ticks[0] / 1.3, ticks[-1] * 1.3)
    else:
        ax.set_xlim(ticks[0] / 2, ticks[0] * 2)
    ax.set_xlabel("GPUs (log2 scale)")


def source_caption(results_dir, inputs):
    """'source: results/sim/x.json (simulated)' for each input (path, doc)."""
    parts = []
    for path, doc in inputs:
        shown = display_path(path, results_dir)
        parts.append(f"{shown} ({SCHEMAS.get(doc.get('schema'), 'unknown')})")
    return "source: " + "; ".join(parts)


def display_path(path, results_dir):
    """The path as a user of the repository would type it: results/... when possible."""
    rel = os.path.relpath(path, os.path.dirname(os.path.abspath(results_dir)))
    if rel.startswith(".."):
        return path
    return rel.replace(os.sep, "/")


def save_figure(fig, out_dir, name, caption, legend_top=0.0):
    """Adds the caption line under the figure and writes out_dir/name.png and .svg
    atomically, without timestamps, so reruns give identical files."""
    fig.text(0.01, 0.008, caption, fontsize=8, color="#333333", ha="left", va="bottom")
    caption_frac = 0.3 / fig.get_size_inches()[1]
    fig.tight_layout(rect=(0, caption_frac, 1, 1 - legend_top))
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for ext, metadata in (("png", {"Software": None}),
                          ("svg", {"Date": None, "Creator": None})):
        target = os.path.join(out_dir, f"{name}.{ext}")
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=f".{ext}.tmp", dir=out_dir)
        os.close(fd)
        try:
            fig.savefig(tmp, format=ext, metadata=metadata)
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; figures are shared
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)
            raise
        written.append(target)
    plt.close(fig)
    return written


def finish_figure(fig, legend_axes, results_dir, sources, out_dir, name, legend_title=None,
                  legend_columns=None):
    """Shared ending of every figure: the legend above the panels (when legend_axes is
    given), the caption naming the source results, and the atomic PNG + SVG write."""
    legend = figure_legend(fig, legend_axes, title=legend_title,
                           columns=legend_columns) if legend_axes else 0.0
    return save_figure(fig, out_dir, name, source_caption(results_dir, sources), legend_top=legend)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def finite(x):
    return x is not None and not isinstance(x, bool) and isinstance(x, (int, float)) \
        and math.isfinite(x)


def standard_args(description, extra=None, input_default=None, schema=None, name_default=None):
    """argparse with the --results/--out pair every script takes, and the --input/--name
    pair when the script reads one results file of `schema`."""
    import argparse
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--results", default="results",
                   help="results directory to read (default: results)")
    p.add_argument("--out", default="figures", help="where to write PNG and SVG (default: figures)")
    if input_default:
        p.add_argument("--input", default=input_default, help=f"{schema} file under --results")
        p.add_argument("--name", default=name_default,
                       help="output file name without extension")
    if extra:
        extra(p)
    return p


# ---------------------------------------------------------------------------------------
# clbo.simulate/1 helpers shared by the GPU-scaling figures


def cluster_title(doc, cluster):
    """'paper-eth-v100: V100-PCIe, 1x 40 Gb/s TCP' from the results' own inputs section."""
    info = (doc.get("inputs") or {}).get("clusters", {}).get(cluster)
    if not isinstance(info, dict):
        return str(cluster)
    fabric, nic = info.get("fabric") or {}, info.get("nic") or {}
    count, rate = nic.get("count"), nic.get("rate_Gbps")
    link = f"{count}x {rate:g} Gb/s" if isinstance(count, int) and finite(rate) else ""
    if fabric.get("type") == "infiniband":
        net = f"{link} {fabric.get('generation', '')} InfiniBand".strip()
    elif fabric.get("type") == "tcp":
        net = f"{link} TCP".strip()
    else:
        net = link
    parts = [p for p in (info.get("gpu"), net) if p]
    return f"{cluster}: {', '.join(parts)}" if parts else str(cluster)


def scaling_series(runs, path, clusters=None, optimizers=None, only_with_baseline=False):
    """{cluster: {series label: [run, ...] sorted by GPUs}}, clusters and series in the
    order the results file lists them. Two runs in one series at the same GPU count are an
    error: the series key would hide a dimension."""
    if clusters is not None:
        missing = [c for c in clusters if c not in {r["cluster"] for r in runs}]
        if missing:
            raise PlotError(f"{path}: no runs for cluster(s) {', '.join(missing)}")
    if optimizers is not None:
        missing = [o for o in optimizers if o not in {r["optimizer"] for r in runs}]
        if missing:
            raise PlotError(f"{path}: no runs for optimizer(s) {', '.join(missing)}")
    extra = series_key_fields(runs)
    out = {}
    for run in runs:
        if clusters is not None and run["cluster"] not in clusters:
            continue
        if optimizers is not None and run["optimizer"] not in optimizers:
            continue
        if only_with_baseline and not run.get("baseline"):
            continue
        label = series_label(run, extra)
        out.setdefault(run["cluster"], {}).setdefault(label, []).append(run)
    for cluster, series in out.items():
        for label, rs in series.items():
            rs.sort(key=lambda r: r["gpus"])
            gpus = [r["gpus"] for r in rs]
            if len(set(gpus)) != len(gpus):
                raise PlotError(f"{path}: cluster {cluster}, series '{label}' has several runs "
                                "at one GPU count; select fewer runs")
    if clusters is not None:
        out = {c: out[c] for c in clusters if c in out}
    return out


def figure_legend(fig, axes_list, title=None, columns=None):
    """One legend for all panels, in a band above them (never over data); `columns` fixes
    the column count (long labels). Returns the fraction of the figure height it needs,
    for save_figure's layout."""
    handles, labels = [], []
    for ax in axes_list:
        for h, l in zip(*ax.get_legend_handles_labels()):
            if l not in labels:
                handles.append(h)
                labels.append(l)
    ncol = columns or min(len(labels), 3 if max((len(l) for l in labels), default=0) > 24 else 6)
    fig.legend(handles, labels, loc="upper center", ncol=max(ncol, 1), title=title,
               borderaxespad=0.3, columnspacing=1.2)
    rows = (len(labels) + ncol - 1) // max(ncol, 1)
    height_in = 0.27 * rows + (0.22 if title else 0.0) + 0.08
    return height_in / fig.get_size_inches()[1]


def panel_grid(n, panel_size=(5.0, 3.6)):
    cols = 1 if n == 1 else 2
    rows = (n + cols - 1) // cols
    fig, axes = new_figure(rows, cols, size=(max(cols * panel_size[0], 7.0),
                                             rows * panel_size[1] + 1.0))
    flat = [ax for row in axes for ax in row]
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def size_text(value):
    """1048576 -> '1M', 67108864 -> '64M' (powers of two, as the benchmarks use); other
    values as they are."""
    n = int(value)
    for shift, suffix in ((30, "G"), (20, "M"), (10, "k")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{suffix}"
    return str(n)


def log_axis_labels(axis):
    """Labels at 1, 2 and 5 of each decade of a log axis, written plainly (%g)."""
    axis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def count_formatter(value, _pos=None):
    """Tick labels such as 200, 5k, 20k, 1.5M: readable on log axes."""
    if value >= 1e6:
        return f"{value / 1e6:g}M"
    if value >= 1e3:
        return f"{value / 1e3:g}k"
    return f"{value:g}"


def log_count_axis(ax):
    """log10 y axis labelled at 1, 2 and 5 of each decade (a single decade still gets
    several labels)."""
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(count_formatter))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def bar_tick_labels(ax, xs, labels):
    """Category labels under bars: 'SLAMB (batch size 8192)' becomes two lines, and long
    lines are slanted so neighbours never overlap."""
    wrapped = [l.replace(" (", "\n(") for l in labels]
    longest = max(len(line) for l in wrapped for line in l.split("\n"))
    ax.set_xticks(xs)
    if longest > 11:
        ax.set_xticklabels(wrapped, rotation=25, ha="right", rotation_mode="anchor")
    else:
        ax.set_xticklabels(wrapped)


def bar_panel_width(n_bars):
    """Inches for a panel of n bars, so labels keep their room."""
    return max(5.0, 0.75 * n_bars + 1.2)
