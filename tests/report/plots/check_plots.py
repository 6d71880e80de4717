#!/usr/bin/python3
"""ctest driver for report/plots/: `check_plots.py CHECK SOURCE_DIR [CLBO]`.

  figures    plot_all.py on the committed results draws every figure of FIGURES as a
             non-trivial PNG and SVG with its source caption, and reruns are byte-identical
  bad-input  a missing, a corrupt and an unknown-schema results file each exit 1 naming the
             file (and the schema), and write nothing
  no-mpl     without matplotlib a script prints which package to install and exits 2
             before any other output
  clbo-plot  `clbo plot` runs plot_all.py, passes its errors through, and refuses a missing
             python clearly

Exit 77 (ctest SKIP_RETURN_CODE) when the check needs matplotlib and it is not installed.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

PYTHON = "/usr/bin/python3"
SKIP = 77


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def run(args, **kw):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(args, capture_output=True, text=True, env=env, **kw)


def need_matplotlib():
    if run([PYTHON, "-c", "import matplotlib"]).returncode != 0:
        print("SKIP: matplotlib is missing (apt-get install python3-matplotlib)")
        sys.exit(SKIP)


def results_copy(src, tmp):
    """The committed results, plus the sample kernel benchmark when the committed set has
    none yet (it comes from `clbo reproduce`)."""
    results = os.path.join(tmp, "results")
    shutil.copytree(os.path.join(src, "results"), results)
    kernels = os.path.join(results, "bench", "kernels-cpu.json")
    if not os.path.exists(kernels):
        os.makedirs(os.path.dirname(kernels), exist_ok=True)
        shutil.copy(os.path.join(src, "tests", "report", "plots", "data", "kernels-cpu-sample.json"),
                    kernels)
    return results


def figure_names(src):
    sys.path.insert(0, os.path.join(src, "report", "plots"))
    sys.dont_write_bytecode = True
    import plot_all  # noqa: E402
    return [f["name"] for f in plot_all.FIGURES]


def check_figures(src):
    need_matplotlib()
    names = figure_names(src)
    with tempfile.TemporaryDirectory() as tmp:
        results = results_copy(src, tmp)
        out = os.path.join(tmp, "figs")
        r = run([PYTHON, os.path.join(src, "report", "plots", "plot_all.py"), "--results", results,
                 "--out", out])
        if r.returncode != 0:
            fail(f"plot_all.py exited {r.returncode}:\n{r.stderr}")
        for name in names:
            for ext, magic in (("png", b"\x89PNG\r\n\x1a\n"), ("svg", b"<svg")):
                path = os.path.join(out, f"{name}.{ext}")
                if not os.path.isfile(path):
                    fail(f"{path} was not written")
                data = open(path, "rb").read()
                if len(data) < 10_000 or magic not in data[:2000]:
                    fail(f"{path} is trivial or not a {ext.upper()} ({len(data)} bytes)")
                # matplotlib keeps each text as a comment beside its glyph paths.
                if ext == "svg" and b"<!-- source: results/" not in data:
                    fail(f"{path} has no 'source: results/...' caption")
        leftovers = [f for f in os.listdir(out) if f.startswith(".")]
        if leftovers:
            fail(f"temporary files left in {out}: {leftovers}")
        # Determinism: a rerun of one figure gives identical files.
        again = os.path.join(tmp, "again")
        r = run([PYTHON, os.path.join(src, "report", "plots", "plot_all.py"), "--results", results,
                 "--out", again, "--only", "volume"])
        if r.returncode != 0:
            fail(f"rerun exited {r.returncode}:\n{r.stderr}")
        for ext in ("png", "svg"):
            a = open(os.path.join(out, f"volume.{ext}"), "rb").read()
            b = open(os.path.join(again, f"volume.{ext}"), "rb").read()
            if a != b:
                fail(f"volume.{ext} differs between two runs")
    print(f"ok: {len(names)} figures, PNG and SVG each")


def expect_error(args, code, needles, what):
    r = run(args)
    if r.returncode != code:
        fail(f"{what}: exit {r.returncode}, expected {code}\nstdout: {r.stdout}\n"
             f"stderr: {r.stderr}")
    for needle in needles:
        if needle not in r.stderr:
            fail(f"{what}: stderr does not mention '{needle}':\n{r.stderr}")
    return r


def check_bad_input(src):
    need_matplotlib()
    script = os.path.join(src, "report", "plots", "throughput.py")
    with tempfile.TemporaryDirectory() as tmp:
        results, out = os.path.join(tmp, "results"), os.path.join(tmp, "figs")
        os.makedirs(results)
        with open(os.path.join(results, "corrupt.json"), "w") as f:
            f.write('{"schema": "clbo.simulate/1", "runs": [')
        with open(os.path.join(results, "future.json"), "w") as f:
            json.dump({"schema": "clbo.simulate/9", "runs": []}, f)
        with open(os.path.join(results, "train.json"), "w") as f:
            json.dump({"schema": "clbo.train/1", "runs": []}, f)
        # The script's contract, end to end: exit 1 and the file named on stderr.
        base = [PYTHON, script, "--results", results, "--out", out, "--input"]
        expect_error(base + ["corrupt.json"], 1, ["corrupt.json", "not valid JSON"],
                     "corrupt file")
        # The other cases go through the same loader; checked in this process (each script
        # start costs a matplotlib import).
        sys.path.insert(0, os.path.join(src, "report", "plots"))
        sys.dont_write_bytecode = True
        import common  # noqa: E402
        cases = [("missing.json", None, ["missing.json", "missing"]),
                 ("future.json", None, ["future.json", "clbo.simulate/9",
                                        "unknown results schema"]),
                 ("train.json", ["clbo.simulate/1"], ["train.json", "clbo.train/1"])]
        for name, schemas, needles in cases:
            try:
                common.load_results(os.path.join(results, name), schemas)
                fail(f"{name} was accepted")
            except common.PlotError as e:
                for needle in needles:
                    if needle not in str(e):
                        fail(f"{name}: error does not mention '{needle}': {e}")
        # plot_all validates every input before drawing: nothing is written.
        expect_error([PYTHON, os.path.join(src, "report", "plots", "plot_all.py"), "--results", results,
                      "--out", out], 1, ["fabrics-optimizers.json", "missing"],
                     "plot_all with a missing input")
        if os.path.exists(out) and os.listdir(out):
            fail(f"failed runs wrote {os.listdir(out)}")
    print("ok: bad inputs refused with the file named")


def check_no_matplotlib(src):
    # Simulates a machine without matplotlib: the import of the package fails.
    code = ("import sys, runpy; sys.modules['matplotlib'] = None; "
            f"sys.argv = ['throughput.py', '--help']; "
            f"runpy.run_path({os.path.join(src, 'report', 'plots', 'throughput.py')!r}, "
            "run_name='__main__')")
    r = expect_error([PYTHON, "-c", code], 2,
                     ["matplotlib is missing", "apt-get install python3-matplotlib"],
                     "no matplotlib")
    if r.stdout:
        fail(f"output before the matplotlib error: {r.stdout!r}")
    print("ok: missing matplotlib named with its Debian package")


def check_clbo_plot(src, clbo):
    with tempfile.TemporaryDirectory() as tmp:
        expect_error([clbo, "plot", "--python", os.path.join(tmp, "no-python")], 2,
                     ["--python", "no-python", "python3-matplotlib"], "clbo plot, no python")
        need_matplotlib()
        missing = os.path.join(tmp, "no-results")
        expect_error([clbo, "plot", "--results", missing, "--out", os.path.join(tmp, "o")], 1,
                     [os.path.join(missing, "sim", "fabrics-optimizers.json")],
                     "clbo plot, missing results")
        results = results_copy(src, tmp)
        out = os.path.join(tmp, "figs")
        r = run([clbo, "plot", "--results", results, "--out", out, "--only", "volume"],
                cwd=tmp)  # not in a checkout: the scripts come from the source tree
        if r.returncode != 0 or not os.path.isfile(os.path.join(out, "volume.png")):
            fail(f"clbo plot --only volume exited {r.returncode}:\n{r.stderr}")
    print("ok: clbo plot")


def main():
    check, src = sys.argv[1], os.path.abspath(sys.argv[2])
    if check == "figures":
        check_figures(src)
    elif check == "bad-input":
        check_bad_input(src)
    elif check == "no-mpl":
        check_no_matplotlib(src)
    elif check == "clbo-plot":
        check_clbo_plot(src, sys.argv[3])
    else:
        fail(f"unknown check {check}")


if __name__ == "__main__":
    main()
