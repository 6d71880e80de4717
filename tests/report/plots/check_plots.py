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
  any-results  figures from a user's own results folder and one file (plot_all.py PATH,
             `clbo plot PATH`), published points only on the simulation a claim spec reads,
             the roofline's CPU and GPU machines, a non-result refused by name

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
    # In this process when it is the interpreter the scripts use: a child costs an import.
    if os.path.realpath(sys.executable) == os.path.realpath(PYTHON):
        import importlib.util
        found = importlib.util.find_spec("matplotlib") is not None
    else:
        found = run([PYTHON, "-c", "import matplotlib"]).returncode == 0
    if not found:
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
        # Determinism: two runs give identical files. The committed figures are one earlier
        # run on the same results; only where they differ (another matplotlib, or a figure
        # not regenerated) is one figure drawn again to tell.
        def same(a_dir, b_dir, ext):
            a, b = os.path.join(a_dir, f"volume.{ext}"), os.path.join(b_dir, f"volume.{ext}")
            return os.path.isfile(b) and open(a, "rb").read() == open(b, "rb").read()
        committed = os.path.join(src, "figures")
        if not all(same(out, committed, ext) for ext in ("png", "svg")):
            again = os.path.join(tmp, "again")
            r = run([PYTHON, os.path.join(src, "report", "plots", "plot_all.py"), "--results",
                     results, "--out", again, "--only", "volume"])
            if r.returncode != 0:
                fail(f"rerun exited {r.returncode}:\n{r.stderr}")
            for ext in ("png", "svg"):
                if not same(out, again, ext):
                    fail(f"volume.{ext} differs between two runs")
            print("note: figures/volume.* differ from a fresh run (another matplotlib, or not "
                  "regenerated)")
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


def tiny_sim(name="my-run", with_paper=False):
    """A clbo.simulate/1 document of a user's own small experiment: Adam and 1-bit Adam at
    4 and 16 GPUs on one cluster (the fields the figures read, nothing more)."""
    runs = []
    for gpus in (4, 16):
        for opt, base, speed in (("Adam", None, None), ("1-bit Adam", "Adam", 1.5 + gpus / 16)):
            step = {"count": 10, "simulated": {"compute_ms": 100.0, "compression_ms": 0.0 if
                                               base is None else 2.0, "comm_ms": 40.0 + gpus,
                                               "time_ms": 140.0 + gpus}}
            run = {"cluster": "my-cluster", "gpus": gpus, "optimizer": opt, "baseline": base,
                   "batch_size": 16 * gpus, "total_steps": 10, "step_kinds": [step],
                   "simulated": {"samples_per_s": 100.0 * gpus / (1 if base is None else 0.7),
                                 "speedup": speed, "total_bytes_per_gpu": 1e12 if base is None
                                 else 2e11, "volume_reduction": None if base is None else 5.0}}
            if with_paper:
                run["paper"] = {"allreduce_ms": 42.0 + gpus, "fwd_ms": 30.0, "bwd_ms": 50.0,
                                "optimizer_ms": 20.0, "source": "a test row"}
            runs.append(run)
    return {"schema": "clbo.simulate/1", "config": {"name": name, "simulate": {"gpus": [4, 16]}},
            "runs": runs}


def tiny_gpu_kernels():
    """A clbo.bench.kernels/1 document as bench_kernels_cuda writes it (context device and
    copy_bw_GBps), two kernels; a stand-in, not a measurement."""
    bench = [{"name": f"BM_{k}/67108864/manual_time", "run_name": f"BM_{k}/67108864/manual_time",
              "run_type": "iteration", "min_bytes_per_elem": b, "bytes_per_second": r}
             for k, b, r in (("AdamUpdate", 28.0, 3.9e12), ("EfSignPack", 12.125, 3.1e12))]
    return {"schema": "clbo.bench.kernels/1", "measured": True, "environment": {"host": "gpu"},
            "benchmark": {"context": {"device": "Test GPU (stand-in)", "copy_bw_GBps": "4300.0"},
                          "benchmarks": bench}}


def check_any_results(src, clbo):
    """Figures and reports from a user's own results: `plot_all.py PATH` on a folder and on
    one file, published points only where a claim spec reads that very simulation, the
    roofline's machines, and a file that is not a clbo result refused by name."""
    need_matplotlib()
    plots = os.path.join(src, "report", "plots")
    sys.path.insert(0, plots)
    sys.dont_write_bytecode = True
    import common  # noqa: E402
    import published  # noqa: E402
    import roofline  # noqa: E402
    with tempfile.TemporaryDirectory() as tmp:
        mine, out = os.path.join(tmp, "mine"), os.path.join(tmp, "figs")
        os.makedirs(os.path.join(mine, "bench"))
        with open(os.path.join(mine, "my-run.json"), "w") as f:
            json.dump(tiny_sim(), f)
        shutil.copy(os.path.join(src, "tests", "report", "plots", "data",
                                 "kernels-cpu-sample.json"),
                    os.path.join(mine, "bench", "kernels-cpu.json"))
        shutil.copy(os.path.join(src, "results", "bench", "collectives-local-compressed.json"),
                    os.path.join(mine, "bench", "collectives.json"))
        # A file that is not a clbo result stops the run before anything is drawn.
        with open(os.path.join(mine, "ds_config.json"), "w") as f:
            json.dump({"train_batch_size": 4096, "optimizer": {"type": "OneBitAdam"}}, f)
        # In this process: each interpreter start costs a matplotlib import.
        import plot_all  # noqa: E402
        try:
            plot_all.draw_each_file(mine, out, None)
            fail("a folder with a non-result was accepted")
        except common.PlotError as e:
            for needle in ("ds_config.json", "not a clbo results file", "no 'schema' field"):
                if needle not in str(e):
                    fail(f"non-result: error does not mention '{needle}': {e}")
        if os.path.exists(out) and os.listdir(out):
            fail(f"a refused folder wrote {os.listdir(out)}")
        os.remove(os.path.join(mine, "ds_config.json"))
        # The folder: each file's figures, named by its key.
        plot_all.draw_each_file(mine, out, None)
        want = ["my-run-throughput", "my-run-speedup", "my-run-volume", "my-run-breakdown",
                "bench-kernels-cpu-roofline", "bench-collectives-collectives"]
        have = sorted(f for f in os.listdir(out))
        for name in want:
            for ext in ("png", "svg"):
                if f"{name}.{ext}" not in have:
                    fail(f"plot_all PATH did not write {name}.{ext} (wrote {have})")
        if any("calibration" in f for f in have):
            fail(f"a calibration figure without published rows: {have}")
        # Published points: a spec whose simulate block is this file's applies; the same
        # claims on a file simulated from another block do not.
        spec = {"name": "my-run", "simulate": {"gpus": [4, 16]}, "claims": [
            {"id": "x", "paper": "1-bit Adam", "paper_value": 2.5, "unit": "x",
             "metric": {"op": "value", "a": {"where": {"optimizer": "1-bit Adam", "gpus": 16},
                                             "field": "simulated.speedup"}}},
            {"id": "y", "paper": "1-bit Adam", "paper_value": 3.0, "unit": "x", "up_to": True,
             "metric": {"op": "max", "of": [
                 {"op": "value", "a": {"where": {"optimizer": "1-bit Adam", "gpus": g},
                                       "field": "simulated.speedup"}} for g in (4, 16)]}},
            {"id": "z", "paper": "1-bit Adam", "paper_value": None, "unit": "x",
             "metric": {"op": "value", "a": {"where": {"gpus": 4},
                                             "field": "simulated.speedup"}}}]}
        marks = published.points([spec], "my-run", tiny_sim(), "simulated.speedup")
        if [(m.get("where"), m["value"], m["up_to"]) for m in marks] != \
                [({"optimizer": "1-bit Adam", "gpus": 16}, 2.5, False), (None, 3.0, True)]:
            fail(f"published points: {marks}")
        other = tiny_sim()
        other["config"]["simulate"] = {"gpus": [4]}
        if published.points([spec], "my-run", other, "simulated.speedup"):
            fail("published points drawn on a file simulated from another block")
        if published.points([spec], "my-run", tiny_sim(), "simulated.samples_per_s"):
            fail("a speedup claim drawn as a throughput point")
        specs = os.path.join(tmp, "specs")
        os.makedirs(specs)
        with open(os.path.join(specs, "my-run.json"), "w") as f:
            json.dump(spec, f)
        # One file, with its specs and published rows: speedup and calibration.
        one = os.path.join(tmp, "calib.json")
        with open(one, "w") as f:
            json.dump(tiny_sim(with_paper=True), f)
        out1 = os.path.join(tmp, "one")
        if clbo:  # end to end through `clbo plot FILE`, from outside a checkout
            r = run([clbo, "plot", one, "--out", out1, "--specs", specs], cwd=tmp)
            if r.returncode != 0:
                fail(f"clbo plot FILE exited {r.returncode}:\n{r.stderr}")
            expect_error([clbo, "plot", os.path.join(tmp, "nowhere"), "--out", out], 2,
                         ["nowhere", "no such results file or folder"], "clbo plot PATH missing")
        else:
            plot_all.draw_each_file(one, out1, specs)
        svg = open(os.path.join(out1, "calib-speedup.svg"), "rb").read()
        if b"published" not in svg or not os.path.isfile(os.path.join(out1, "calib-calibration.png")):
            fail(f"plot_all FILE: no published point or calibration figure ({os.listdir(out1)})")
        # The roofline names each machine, and a requested file that is absent is named as
        # not measured, with no point drawn for it.
        gpu = os.path.join(mine, "bench", "kernels-cuda.json")
        with open(gpu, "w") as f:
            json.dump(tiny_gpu_kernels(), f)
        kind, machine = roofline.machine_of(tiny_gpu_kernels())
        ceiling, _ = roofline.ceiling_of(tiny_gpu_kernels())
        if (kind, machine, ceiling) != ("GPU", "Test GPU (stand-in)", 4.3e12):
            fail(f"GPU file read as {kind} {machine} {ceiling}")
        cpu = common.load_results(os.path.join(mine, "bench", "kernels-cpu.json"))
        if roofline.machine_of(cpu)[0] != "CPU" or not roofline.ceiling_of(cpu)[0]:
            fail("CPU kernels file: machine or ceiling not read")
        svg = open(roofline.plot(mine, os.path.join(tmp, "roof"), input="bench/kernels-cpu.json",
                                 also=["bench/kernels-cuda.json", "bench/none.json"])[1],
                   "rb").read()
        for needle in (b"GPU: Test GPU (stand-in) (measured)", b"CPU ceiling",
                       b"GPU ceiling", b"not measured: "):
            if needle not in svg:
                fail(f"roofline: {needle!r} missing")
    print("ok: figures from any results")


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
    elif check == "any-results":
        check_any_results(src, sys.argv[3] if len(sys.argv) > 3 else None)
    else:
        fail(f"unknown check {check}")


if __name__ == "__main__":
    main()
