#!/usr/bin/python3
"""Kernel roofline fractions from a clbo.bench.kernels/1 file (Google Benchmark JSON from
`clbo bench kernels` wrapped with its environment): one horizontal bar per kernel and size,
showing frac_of_copy_bw = the kernel's minimum bytes per element x elements/s over the
machine's streaming reference (the fastest of memcpy, a scale loop and two in-place update
loops, measured in the same run; 1.0 = streams as fast as the reference). Only out-of-cache
runs carry the counter, and runs marked in_cache = 1 are left out even if they carry it,
since an in-cache rate is no fraction of memory bandwidth.

    python3 report/plots/roofline.py --results results --out figures \
        [--input bench/kernels-cpu.json] [--counter frac_of_copy_bw]
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402  (must come first: the matplotlib guard)


def size_text(value):
    """1048576 -> '1M', 67108864 -> '64M' (powers of two, as the benchmarks use)."""
    n = int(value)
    for shift, suffix in ((30, "G"), (20, "M"), (10, "k")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{suffix}"
    return str(n)


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


def rows_from(doc, path, counter):
    bench = doc.get("benchmark")
    if not isinstance(bench, dict) or not isinstance(bench.get("benchmarks"), list):
        raise common.PlotError(f"{path}: corrupt results file, 'benchmark.benchmarks' is missing")
    entries = bench["benchmarks"]
    if any(e.get("run_type") == "aggregate" for e in entries if isinstance(e, dict)):
        # With repetitions, plot the mean aggregate, not every repetition.
        entries = [e for e in entries if e.get("aggregate_name") == "mean"]
    values = {}
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or counter not in e:
            continue  # in-cache runs and any kernel without the counter
        if e.get("in_cache") == 1:
            continue  # an in-cache rate over memory bandwidth is not a roofline fraction
        name = e.get("run_name") or e.get("name")
        if not isinstance(name, str):
            raise common.PlotError(f"{path}: benchmarks[{i}] has no name")
        values.setdefault(name, []).append(common.field(e, path, counter, f"benchmark {name}"))
    if not values:
        raise common.PlotError(f"{path}: no benchmark reports the counter '{counter}'")
    rows = []
    for name, vs in values.items():
        kernel, args = parse_name(name)
        rows.append((kernel, args, sum(vs) / len(vs)))
    return rows


def plot(results_dir, out_dir, name="roofline", input="bench/kernels-cpu.json",
         counter="frac_of_copy_bw"):
    path = os.path.join(results_dir, input)
    doc = common.load_results(path, ["clbo.bench.kernels/1"])
    rows = rows_from(doc, path, counter)
    # Bars are styled by the first (size) argument; later arguments go into the row label.
    # memcpy is the reference itself (its argument is a byte count): a style of its own.
    def size_of(kernel, args):
        return "reference" if kernel == "BM_memcpy" else (args[0][1] if args else "")
    sizes = common.unique_in_order([size_of(k, a) for k, a, _ in rows])
    size_styles = {s: st for s, st in zip(sizes, (common.SEGMENT_STYLES * 4)[:len(sizes)])}
    # A small gap between kernels groups a kernel's sizes together.
    ys, y, previous = [], 0.0, None
    for kernel, _, _ in rows:
        y -= 1.0 if previous in (None, kernel) else 1.5
        ys.append(y)
        previous = kernel
    fig, axes = common.new_figure(1, 1, size=(9.0, 0.3 * (-ys[-1]) + 2.6))
    ax = axes[0][0]
    labels, seen_sizes = [], set()
    for y, (kernel, args, value) in zip(ys, rows):
        size = size_of(kernel, args)
        if size == "reference":
            label = f"memcpy ({size_text(args[0][1]) if args else '?'}iB buffer)"
            legend = "memcpy rerun as a benchmark"
        else:
            rest = ", ".join(f"{k}={v}" if k else v for k, v in args[1:])
            n = f"n={size_text(size)}" if size.isdigit() else size
            label = kernel.removeprefix("BM_") + f" ({', '.join(p for p in (n, rest) if p)})"
            legend = f"n = {size_text(size)} elements" if size.isdigit() else (
                size or "no size argument")
        labels.append(label)
        ax.barh(y, value, height=0.8, linewidth=0.8,
                label=None if size in seen_sizes else legend, **size_styles[size])
        seen_sizes.add(size)
        ax.annotate(f"{value:.2f}", xy=(value, y), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=8)
    ax.axvline(1.0, color="black", linewidth=1.0, linestyle="--",
               label="1.0 = streaming reference bandwidth")
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=9)
    ax.set_ylim(ys[-1] - 0.8, ys[0] + 0.8)
    ax.set_xlim(0, max(1.15, max(v for _, _, v in rows) * 1.15))
    ax.grid(axis="y", visible=False)
    ax.set_axisbelow(True)
    ax.set_xlabel(f"{counter}: minimum bytes moved per second / the reference's "
                  "(out-of-cache runs only)")
    context = (doc.get("benchmark") or {}).get("context") or {}
    copy = context.get("copy_bytes_per_second")
    host = (doc.get("environment") or {}).get("host") or context.get("host_name", "?")
    title = f"kernel roofline on {host}, {context.get('num_cpus', '?')} CPUs"
    try:
        reference = context.get("copy_reference", "memcpy").replace("_", " ")
        title += f"; reference: {reference}, {float(copy) / 1e9:.1f} GB/s (read + write)"
    except (TypeError, ValueError):
        pass
    ax.set_title(title)
    return common.finish_figure(fig, [ax], results_dir, [(path, doc)], out_dir, name)


def main():
    def extra(p):
        p.add_argument("--counter", default="frac_of_copy_bw",
                       help="Google Benchmark counter to plot (default: frac_of_copy_bw)")
    a = common.standard_args(__doc__.split("\n")[0], extra, "bench/kernels-cpu.json",
                             "clbo.bench.kernels/1", "roofline").parse_args()
    for f in plot(a.results, a.out, a.name, a.input, a.counter):
        print(f"wrote {f}")


if __name__ == "__main__":
    common.run_main(main)
