#!/usr/bin/python3
"""Kernel roofline from clbo.bench.kernels/1 files (Google Benchmark JSON from `clbo bench
kernels` wrapped with its environment): each kernel's achieved bandwidth (bytes_per_second:
its minimum bytes per element x elements/s, in GB/s) against its minimum bytes per element,
under the bandwidth ceiling measured in the same run (CPU: the fastest of memcpy, a scale
loop and two in-place update loops, context copy_bytes_per_second; GPU: a device-to-device
copy, context copy_bw_GBps). Each file is one machine: CPU files are drawn as filled
circles, GPU files (those whose context names a CUDA device) as triangles, each with its own
ceiling. A file the figure was asked for but that is absent is named as not measured; no
point is drawn for it. Runs marked in_cache = 1 are left out (an in-cache rate is not bound
by memory bandwidth) and counted in the title.

    python3 report/plots/roofline.py --results results --out figures \
        [--input bench/kernels-cpu.json] [--also gpu/kernels-cuda.json]
"""
import os
import math
import re
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402  (must come first: the matplotlib guard)

# One style per machine kind; the reference copy (BM_memcpy, BM_CopyD2D) gets a hollow one.
MACHINE_STYLES = {
    "CPU": dict(color="#000000", marker="o"),
    "GPU": dict(color="#0072B2", marker="^"),
}
REFERENCE_KERNELS = ("BM_memcpy", "BM_CopyD2D")


def parse_name(name):
    """'BM_server_step/c:1048576/p:4/real_time' -> ('BM_server_step', [('c', '1048576'),
    ('p', '4')]); unnamed arguments get the key ''."""
    parts = [p for p in name.split("/") if p and not re.fullmatch(
        r"real_time|process_time|manual_time|min_time:.*|iterations:.*|repeats:.*|threads:.*",
        p)]
    args = []
    for p in parts[1:]:
        key, _, value = p.rpartition(":")
        args.append((key, value))
    return parts[0], args


def machine_of(doc):
    """('GPU', 'NVIDIA H200 ...') or ('CPU', 'vm, 2 CPUs'), from the run's own context."""
    bench, environment = common.kernel_bench(doc)
    context = bench.get("context") or {}
    device = context.get("device")
    if isinstance(device, str) and device:
        return "GPU", device
    host = environment.get("host") or context.get("host_name", "?")
    cpus = context.get("num_cpus")
    return "CPU", f"{host}, {cpus} CPUs" if cpus else str(host)


def ceiling_of(doc):
    """(bytes/s, what it is) of the copy measured in the same run, or (None, reason)."""
    context = common.kernel_bench(doc)[0].get("context") or {}
    try:
        if "copy_bytes_per_second" in context:
            reference = str(context.get("copy_reference", "copy")).replace("_", " ")
            return float(context["copy_bytes_per_second"]), reference
        if "copy_bw_GBps" in context:
            return float(context["copy_bw_GBps"]) * 1e9, "device-to-device copy"
    except (TypeError, ValueError):
        return None, "the ceiling in the context is not a number"
    return None, "no copy bandwidth recorded in this run"


def points_from(doc, path):
    """[(kernel, args, min bytes per element, bytes/s)] of the out-of-cache runs, and how
    many in-cache runs were left out."""
    bench = common.kernel_bench(doc)[0]
    if not isinstance(bench, dict) or not isinstance(bench.get("benchmarks"), list):
        raise common.PlotError(f"{path}: corrupt results file, its Google Benchmark "
                               "'benchmarks' list is missing")
    entries = [e for e in bench["benchmarks"] if isinstance(e, dict)]
    if any(e.get("run_type") == "aggregate" for e in entries):
        # With repetitions, plot the mean aggregate, not every repetition.
        entries = [e for e in entries if e.get("aggregate_name") == "mean"]
    values, in_cache = {}, 0
    for e in entries:
        if "min_bytes_per_elem" not in e or "bytes_per_second" not in e:
            continue  # a benchmark without the roofline counters
        if e.get("in_cache") == 1:
            in_cache += 1
            continue
        name = e.get("run_name") or e.get("name")
        if not isinstance(name, str):
            raise common.PlotError(f"{path}: a benchmark has no name")
        where = f"benchmark {name}"
        values.setdefault(name, []).append((common.field(e, path, "min_bytes_per_elem", where),
                                            common.field(e, path, "bytes_per_second", where)))
    points = []
    for name, vs in values.items():
        kernel, args = parse_name(name)
        points.append((kernel, args, vs[0][0], sum(v for _, v in vs) / len(vs)))
    return points, in_cache


def point_label(kernel, args, sizes_of_kernel):
    """'ef_sign_pack', with the size only where the kernel has several out-of-cache sizes
    and the other arguments always ('server_step p=4')."""
    parts = [kernel.removeprefix("BM_")]
    if args and sizes_of_kernel > 1:
        parts.append(f"n={common.size_text(args[0][1])}" if args[0][1].isdigit() else args[0][1])
    parts += [f"{k}={v}" if k else v for k, v in args[1:]]
    return " ".join(parts)


def place_labels(fig, ax, labels):
    """Names beside their points, each moved up or down until it overlaps no other name
    (several kernels share a bytes-per-element value)."""
    # The limits and scales are set, so data positions map to pixels (before tight_layout,
    # which moves the axes a little: offsets are in points, so names stay clear).
    scale = fig.dpi / 72.0
    # Rectangles (x0, y0, x1, y1) in pixels already taken: every marker, then each name.
    taken = []
    for _, x, y, _ in labels:
        px, py = ax.transData.transform((x, y))
        taken.append((px - 5 * scale, py - 5 * scale, px + 5 * scale, py + 5 * scale))

    def free(r):
        return all(r[2] <= t[0] or r[0] >= t[2] or r[3] <= t[1] or r[1] >= t[3] for t in taken)

    for text, x, y, color in sorted(labels, key=lambda l: (l[1], -l[2])):
        px, py = ax.transData.transform((x, y))
        width, height = 4.3 * len(text) * scale, 9.0 * scale
        for step in (0, -1, 1, -2, 2, -3, 3, -4, 4, -5, 5, -6, 6):
            x0, y0 = px + 6 * scale, py + (step * 10 - 3) * scale
            rect = (x0, y0, x0 + width, y0 + height)
            if free(rect):
                break
        taken.append(rect)
        ax.annotate(text, xy=(x, y), xytext=(6, step * 10 - 3), textcoords="offset points",
                    fontsize=7, color=color, va="bottom",
                    arrowprops=None if step == 0 else dict(arrowstyle="-", color=color,
                                                           linewidth=0.4, shrinkA=0,
                                                           shrinkB=4))


def plot(results_dir, out_dir, name="roofline", input="bench/kernels-cpu.json", also=None):
    """`input` must exist; each of `also` is drawn when present and named as not measured
    when absent."""
    sources, absent = [], []
    for i, rel in enumerate([input] + list(also or [])):
        path = os.path.join(results_dir, rel)
        if i > 0 and not os.path.exists(path):
            absent.append(common.display_path(path, results_dir))
            continue
        sources.append((path, common.load_results(path, common.KERNEL_BENCH_SCHEMAS)))
    fig, axes = common.new_figure(1, 1, size=(10.0, 6.6))
    ax = axes[0][0]
    xs_all, ys_all, titles, labelled, labels = [], [], [], set(), []
    for path, doc in sources:
        kind, machine = machine_of(doc)
        style = MACHINE_STYLES[kind]
        points, in_cache = points_from(doc, path)
        if not points:
            raise common.PlotError(f"{path}: no out-of-cache benchmark reports both "
                                   "min_bytes_per_elem and bytes_per_second")
        ceiling, what = ceiling_of(doc)
        sizes = {}
        for kernel, args, _, _ in points:
            sizes.setdefault(kernel, set()).add(args[0][1] if args else "")
        for kernel, args, x, y in points:
            reference = kernel in REFERENCE_KERNELS
            legend = (f"{kind}: the reference copy rerun as a benchmark" if reference
                      else f"{kind}: {machine} (measured)")
            ax.plot([x], [y / 1e9], linestyle="none", marker=style["marker"], markersize=8,
                    color=style["color"], markeredgecolor=style["color"],
                    markerfacecolor="none" if reference else style["color"],
                    label=None if legend in labelled else legend)
            labelled.add(legend)
            labels.append((point_label(kernel, args, len(sizes[kernel])), x, y / 1e9,
                           style["color"]))
            xs_all.append(x)
            ys_all.append(y / 1e9)
        if ceiling:
            ax.axhline(ceiling / 1e9, color=style["color"], linestyle="--", linewidth=1.2,
                       label=f"{kind} ceiling: {what}, {ceiling / 1e9:.1f} GB/s "
                       "(read + write, measured in the same run)")
            ys_all.append(ceiling / 1e9)
        titles.append(f"{kind} {machine}: {len(points)} kernels out of cache"
                      + (f", {in_cache} in-cache runs left out" if in_cache else "")
                      + ("" if ceiling else f"; no ceiling ({what})"))
    for shown in absent:
        titles.append(f"not measured: {shown} is absent, so no point is drawn for it")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    lo, hi = math.floor(math.log2(min(xs_all))), math.ceil(math.log2(max(xs_all)))
    ax.set_xticks([2.0 ** e for e in range(lo, hi + 1)])
    ax.xaxis.set_major_formatter(common.matplotlib.ticker.FormatStrFormatter("%g"))
    ax.xaxis.set_minor_locator(common.matplotlib.ticker.NullLocator())
    ax.set_xlim(2.0 ** lo / 1.2, 2.0 ** hi * 1.2)
    ax.set_ylim(min(ys_all) / 2, max(ys_all) * 2)
    place_labels(fig, ax, labels)
    common.log_axis_labels(ax.yaxis)  # a run within one decade still gets several labels
    ax.set_xlabel("minimum bytes each element must move (log2 scale; "
                  "docs/reference/published.md §5.5)")
    ax.set_ylabel("achieved GB/s: minimum bytes moved per second (log scale)")
    ax.set_title("kernel roofline\n" + "\n".join(titles), fontsize=9)
    return common.finish_figure(fig, [ax], results_dir, sources, out_dir, name, legend_columns=1)


def main():
    def extra(p):
        p.add_argument("--also", action="append", metavar="FILE",
                       help="another clbo.bench.kernels/1 file under --results (another "
                       "machine), drawn when present; repeatable")
    a = common.standard_args(__doc__.split("\n")[0], extra, "bench/kernels-cpu.json",
                             "clbo.bench.kernels/1", "roofline").parse_args()
    for f in plot(a.results, a.out, a.name, a.input, a.also):
        print(f"wrote {f}")


if __name__ == "__main__":
    common.run_main(main)
