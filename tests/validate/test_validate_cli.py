#!/usr/bin/python3
"""`clbo validate`: a bad grid is refused before anything starts (exit 2, the field and the
value named, no namespace, no results file); --check accepts every committed grid; `quick`
runs end to end on the emulated cluster (root and CAP_NET_ADMIN, else a visible skip).

`repeatability` compares the committed full grid's runs with each other, and `resimulate`
simulates a kept quick run's measurements again (neither emulates anything).

    test_validate_cli.py bad-input|check|repeatability|resimulate|quick CLBO SOURCE_DIR
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from clbo_script import SKIP, fail, scratch  # noqa: E402


def compare_results(src):
    """The regeneration test's comparer (tests/reproduce/compare_results.py): one place for
    how two results files are compared."""
    sys.path.insert(0, os.path.join(src, "tests", "reproduce"))
    import compare_results as module  # noqa: E402
    return module


def clbo_interfaces():
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return [line.split(":")[1].strip() for line in out.splitlines()
            if line.split(":")[1].strip().startswith("clbo")]


def base():
    return {"name": "t", "clusters": [{"topology": "single_switch", "hosts": 2,
                                        "link_Mbps": 100}],
            "ops": ["allreduce:ring"], "sizes": {"min": "64K", "max": "64K", "factor": 2}}


def refused(clbo, spec, field, value, work):
    path = os.path.join(work, "grid.json")
    out = os.path.join(work, "out.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    before = clbo_interfaces()
    r = subprocess.run([clbo, "validate", path, "-o", out], capture_output=True, text=True,
                       timeout=60)
    text = r.stdout + r.stderr
    if r.returncode != 2:
        fail("expected exit 2 for %s = %s, got %d: %s" % (field, value, r.returncode, text))
    if field not in text or value not in text:
        fail("the error should name %s and %s: %s" % (field, value, text))
    if os.path.exists(out):
        fail("a refused grid wrote %s" % out)
    if clbo_interfaces() != before:
        fail("a refused grid created interfaces: %s" % clbo_interfaces())
    return text.strip().splitlines()[-1]


def test_bad_input(clbo):
    work = scratch(prefix="clbo-validate-test-")
    cases = []
    s = base(); s["ops"] = ["allreduce:tree"]
    cases.append((s, "ops[0]", "allreduce:tree"))
    s = base(); s["clusters"][0]["topology"] = "ring"
    cases.append((s, "clusters[0].topology", "ring"))
    s = base(); s["clusters"][0]["hosts"] = 8; s["clusters"][0]["ranks_per_host"] = 16
    cases.append((s, "clusters[0].ranks_per_host", "16"))
    s = base(); s["clusters"][0]["link_Mbps"] = [100, 5000]
    cases.append((s, "clusters[0].link_Mbps[1]", "5000"))
    s = base(); s["clusters"][0]["hosts"] = 9
    cases.append((s, "clusters[0].hosts", "9"))
    s = base(); s["clusters"][0].update(topology="two_level", hosts=6, hosts_per_leaf=4)
    cases.append((s, "clusters[0].hosts_per_leaf", "4"))
    s = base(); s["clusters"][0].update(topology="two_level", hosts=4, hosts_per_leaf=2,
                                        oversubscription=0.1)
    cases.append((s, "clusters[0].oversubscription", "0.1"))
    s = base(); s["sizes"]["max"] = "16X"
    cases.append((s, "sizes.max", "16X"))
    s = base(); s["steps"] = {"optimizers": ["Adam", "OnebitAdam"]}
    cases.append((s, "steps.optimizers[1]", "OnebitAdam"))
    s = base(); s["clusters"][0]["colour"] = "blue"
    cases.append((s, "clusters[0].colour", "colour"))
    for spec, field, value in cases:
        print("ok: %s" % refused(clbo, spec, field, value, work))


def test_check(clbo, src):
    folder = os.path.join(src, "experiments", "validation")
    names = sorted(f[:-5] for f in os.listdir(folder) if f.endswith(".json"))
    if not {"quick", "full"} <= set(names):
        fail("experiments/validation lacks quick.json or full.json: %s" % names)
    for name in names:  # every committed grid
        path = os.path.join(folder, name + ".json")
        r = subprocess.run([clbo, "validate", path, "--check"], capture_output=True, text=True)
        if r.returncode != 0 or ": ok (" not in r.stdout:
            fail("--check %s: exit %d %s%s" % (name, r.returncode, r.stdout, r.stderr))
        print(r.stdout.strip().splitlines()[-1])


def test_repeatability(clbo, src):
    """--repeatability over the committed run and a copy of it changed by hand: the spread,
    the other runs' median and the file's own errors; refusals name the file and the field,
    and write nothing."""
    grid = os.path.join(src, "experiments", "validation", "full.json")
    committed = os.path.join(src, "results", "validation", "full.json")
    work = scratch()
    with open(committed) as f:
        doc = json.load(f)
    doc["cases"][0]["measured_s"] *= 1.5  # one case measured 50% slower in the second run
    doc["config"]["description"] = "reworded"  # a description measures nothing
    second = os.path.join(work, "second.json")
    with open(second, "w") as f:
        json.dump(doc, f)
    out = os.path.join(work, "rep.json")
    r = subprocess.run([clbo, "validate", grid, "--repeatability", committed, second, "-o", out],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0 or "other runs' median" not in r.stdout:
        fail("--repeatability: exit %d %s%s" % (r.returncode, r.stdout, r.stderr))
    with open(out) as f:
        rep = json.load(f)
    if rep["schema"] != "clbo.validate.repeatability/1" or len(rep["runs"]) != 2:
        fail("--repeatability wrote %s with %d runs" % (rep["schema"], len(rep["runs"])))
    if rep["cases_in_every_run"] != len(doc["cases"]) or rep["cases_left_out"]:
        fail("every case is in both runs: %d of %d, left out %s" % (
            rep["cases_in_every_run"], len(doc["cases"]), rep["cases_left_out"]))
    first = rep["cases"][0]
    if abs(first["spread"] - 0.5) > 1e-9 or abs(first["other_runs_median_rel_error"][1] - 0.5) > 1e-9:
        fail("the changed case: spread %s, other runs' median error %s" % (
            first["spread"], first["other_runs_median_rel_error"]))
    if any(c["spread"] != 0 for c in rep["cases"][1:]):
        fail("the unchanged cases should not spread")
    print("ok: %d cases compared" % rep["cases_in_every_run"])
    # Refusals: one run; a file of another schema.
    smoke = os.path.join(src, "results", "convergence", "smoke.json")
    for args, named in (([committed], ["'--repeatability'", "1 file"]),
                        ([committed, smoke], [smoke, "'schema'", "clbo.train/1"])):
        os.path.exists(out) and os.remove(out)
        r = subprocess.run([clbo, "validate", grid, "--repeatability"] + args + ["-o", out],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 2 or any(n not in r.stderr for n in named) or os.path.exists(out):
            fail("expected exit 2 naming %s and no file: exit %d %s" % (named, r.returncode,
                                                                        r.stderr))
        print("ok: %s" % r.stderr.strip().splitlines()[-1])
    # -o naming one of the inputs would overwrite a run: refused, the input left as it was.
    before = open(second).read()
    r = subprocess.run([clbo, "validate", grid, "--repeatability", committed, second, "-o",
                        second], capture_output=True, text=True, timeout=60)
    if r.returncode != 2 or "'-o'" not in r.stderr or open(second).read() != before:
        fail("-o naming an input: exit %d %s" % (r.returncode, r.stderr))
    print("ok: %s" % r.stderr.strip().splitlines()[-1])


def test_quick(clbo, src):
    emu = os.path.join(src, "emu", "clbo-emu")
    r = subprocess.run(["/usr/bin/python3", emu, "check"], capture_output=True, text=True)
    if r.returncode != 0:
        print("SKIP: " + (r.stdout + r.stderr).strip())
        sys.exit(SKIP)
    tmp = scratch(prefix="clbo-validate-test-")
    out = os.path.join(tmp, "quick.json")
    work = os.path.join(tmp, "work")
    path = os.path.join(src, "experiments", "validation", "quick.json")
    r = subprocess.run([clbo, "validate", path, "-o", out, "--keep-work", work],
                       capture_output=True, text=True, timeout=600, cwd=src)
    if r.returncode != 0:
        fail("clbo validate quick: exit %d\n%s%s" % (r.returncode, r.stdout, r.stderr[-3000:]))
    doc = json.load(open(out))
    check_result(doc)
    if clbo_interfaces():
        fail("leftover interfaces: %s" % clbo_interfaces())
    check_resimulate(clbo, src, path, work, doc, tmp)
    print("ok: clbo validate quick: %d cases, bandwidth-bound median |error| %s" %
          (len(doc["cases"]), doc["summary"]["median_abs_rel_error"]))


def check_result(doc):
    """What a result of the quick grid holds, measured or simulated again from kept
    measurements."""
    # 2 ops x 2 sizes, and Adam's dense steps and 1-bit Adam's warmup and compression steps,
    # on each of the 2 clusters.
    if doc["schema"] != "clbo.validate/1" or len(doc["cases"]) != 14:
        fail("unexpected result: schema %s, %d cases" % (doc["schema"], len(doc["cases"])))
    # Each cluster's steps are simulated with its own compute calibration, run right before
    # them on its ranks at once, and one rank alone, against which the compute contention is
    # measured.
    for c in doc["clusters"]:
        cal = c.get("calibration") or {}
        alone = c.get("calibration_alone") or {}
        if (not cal.get("gradient_s", 0) > 0 or cal.get("ranks") != c["config"]["hosts"]
                or "OneBitAdam" not in cal.get("optimizer_arithmetic_s", {})
                or alone.get("ranks") != 1 or not alone.get("gradient_s", 0) > 0):
            fail("cluster %s without its own calibrations: %s / %s" % (c["id"], cal, alone))
        factor = c["compute_contention"]["factor"]
        if (not c["compute_contention"]["source"].startswith("measured")
                or abs(factor - cal["gradient_s"] / alone["gradient_s"]) > 1e-9 * factor):
            fail("cluster %s: compute contention %s" % (c["id"], c["compute_contention"]))
    # The streaming kernels' contention is measured in the run for each rank count (2 and 4
    # here), and each cluster's kernels from memory slow by its own count's factor.
    sc = doc["machine"].get("streaming_contention") or {}
    by_ranks = sc.get("by_ranks", {})
    if sorted(by_ranks) != ["2", "4"] or not sc.get("alone_eps", 0) > 0:
        fail("machine.streaming_contention: %s" % sc)
    for p, m in by_ranks.items():
        if len(m["copies_eps"]) != int(p) or abs(
                m["factor"] - sc["alone_eps"] / m["median_eps"]) > 1e-9 * m["factor"]:
            fail("streaming contention for %s ranks: %s" % (p, m))
    # The factor a cluster uses is its count's measurement, never below the cores'
    # time-sharing max(1, p/C): a measurement under it (which happens by noise when p/C is
    # exactly the memory's limit too, as 1.98 for 4 copies on 2 cores) takes the floor and
    # says so in its source.
    for c in doc["clusters"]:
        p = c["config"]["hosts"] * c["config"]["ranks_per_host"]
        measured = by_ranks[str(p)]["factor"]
        floor = max(1.0, p / doc["machine"]["cpus"])
        got = c["streaming_contention"]
        floored = measured < floor
        if (got.get("measured_factor") != measured or got["factor"] != max(measured, floor)
                or got["source"].startswith("measured") == floored):
            fail("cluster %s: streaming contention %s, want %s measured, floor %s" %
                 (c["id"], got, measured, floor))
    # Every emulated host ran the grid's congestion control (quick.json leaves it at reno).
    for c in doc["clusters"]:
        tcp = c["emulation"].get("tcp") or {}
        if tcp.get("congestion_control") != "reno" or tcp.get("set_by") != "the plan":
            fail("cluster %s: the hosts' TCP settings %s, want reno set by the plan" %
                 (c["id"], tcp))
    # Every cluster measured TCP's warm all-pairs rounds (an empty one, 64 and 256 KiB per
    # pair, then the long burst: half a second at the rate), and no Python probe; the
    # simulation's efficiency by size comes from them: 1 at one packet (4 frames of 1448
    # bytes), then one point per loaded size, each in [0.3, 1], the last the cluster's.
    for c in doc["clusters"]:
        warm = c["links"].get("tcp_warm_rounds") or []
        by = c.get("all_pairs_efficiency_by_bytes") or []
        sizes = [w["bytes_per_pair"] for w in warm]
        long_bytes = int(c["config"]["link_Mbps"] * 1e6 / 8 * 0.5 / (c["config"]["hosts"] - 1))
        long_bytes = long_bytes // 65536 * 65536
        if (sizes != [8, 65536, 262144, long_bytes] or not all(w["median_s"] > 0 for w in warm)
                or c["links"]["tcp_alltoall_s"] is not None):
            fail("cluster %s: warm rounds %s, Python probe %s" %
                 (c["id"], warm, c["links"]["tcp_alltoall_s"]))
        want = [4 * 1448] + sizes[1:]
        if ([b["bytes_per_pair"] for b in by] != want or by[0]["efficiency"] != 1
                or not all(0.3 <= b["efficiency"] <= 1 for b in by)
                or by[-1]["efficiency"] != c["all_pairs_efficiency"]):
            fail("cluster %s: all-pairs efficiency by size %s" % (c["id"], by))
    if doc["inputs"]["calibration"] != "per cluster: clusters[].calibration":
        fail("inputs.calibration: %s" % doc["inputs"]["calibration"])
    for c in doc["cases"]:
        for key in ("op", "bytes", "hosts", "ranks_per_host", "rate_Mbps", "topology",
                    "measured_s", "simulated_s", "rel_error", "bound"):
            if key not in c:
                fail("case without %s: %s" % (key, c))
        if not c["measured_s"] > 0 or not c["simulated_s"] > 0:
            fail("non-positive time: %s" % c)
    # Every step case is simulated again with its own kind's compute from the steps job:
    # the measured gradient and arithmetic, and the error against the same measured step.
    steps = [c for c in doc["cases"] if c["op"] == "step"]
    for c in steps:
        j = c.get("with_job_compute") or {}
        want = (j.get("simulated_s", 0) - c["measured_s"]) / c["measured_s"]
        if (not j.get("gradient_s", 0) > 0 or not j.get("arithmetic_s", -1) >= 0
                or abs(j.get("rel_error", 1e9) - want) > 1e-9):
            fail("step case without its job's compute: %s" % c)
        # The simulated communication is the network's with the calibration's floor on the
        # CPU the packets leave, and the simulated step is its parts.
        parts = c["simulated_parts"]
        floor = parts.get("comm_floor_s")
        share = parts.get("comm_packet_cpu_share", -1)
        cal = next(x["calibration"] for x in doc["clusters"] if x["id"] == c["cluster"])
        if (floor is None or floor != cal["comm_floor_s"][c["optimizer"]][c["phase"]]
                or not 0 <= share <= 1
                or abs(parts["comm_s"] - comm_with_floor(parts)) > 1e-12
                or abs(c["simulated_s"] - parts["compute_s"] - parts["optimizer_s"]
                       - parts["compression_kernels_s"] - parts["comm_s"]) > 1e-9):
            fail("step case without its communication floor: %s" % parts)
        # Its compute is the calibration's gradient of the same kind of step (every cluster of
        # the quick grid calibrates its own ranks, so no contention factor comes between).
        grad = cal["gradient_by_kind_s"][c["optimizer"]][c["phase"]]
        if (cal["ranks"] != c["hosts"] * c["ranks_per_host"]
                or abs(parts["compute_s"] - grad) > 1e-12 * grad):
            fail("step case %s %s: compute %s, want the calibration's gradient of its kind, %s"
                 % (c["optimizer"], c["phase"], parts["compute_s"], grad))
    sj = doc["summary"].get("steps_with_job_compute") or {}
    if sj.get("stats", {}).get("cases") != len(steps):
        fail("summary.steps_with_job_compute: %s" % sj)
    for key in ("median_abs_rel_error", "max_abs_rel_error", "latency_bound", "bandwidth_bound"):
        if key not in doc["summary"]:
            fail("summary without %s" % key)


def comm_with_floor(parts):
    """docs/validation.md, "The collectives' CPU floor": the wire time, or the packets' and
    the CPUs' part's work over the cores, whichever is longer."""
    net, share = parts["comm_network_s"], parts["comm_packet_cpu_share"]
    return net + max(0.0, parts["comm_floor_s"] - net * (1 - share))


def check_comm_floor(doc, work, resimulated):
    """A calibration whose steps took 2 s longer, its gradient, arithmetic and kernels the
    same, raises every step's communication floor by 2 s, and the simulated steps (with the
    calibration's compute and with the job's) take it whole, with the packets' share of the
    wire time on top."""
    steps = [c for c in doc["cases"] if c["op"] == "step"]
    if not steps:
        return
    cluster = steps[0]["cluster"]
    cfile = os.path.join(work, cluster, "calibration.json")
    kept = open(cfile).read()
    cal = json.loads(kept)
    for run in cal["runs"]:
        t = run["timing"]["steps"]
        col = t["columns"].index("step_s")
        for row in t["rows"]:
            row[col] += 2.0
    json.dump(cal, open(cfile, "w"))
    try:
        slower = {(c["cluster"], c["optimizer"], c["phase"]): c
                  for c in resimulated("floor.json") if c["op"] == "step"}
    finally:
        open(cfile, "w").write(kept)
    for old in steps:
        new = slower[(old["cluster"], old["optimizer"], old["phase"])]
        if old["cluster"] != cluster:
            if new != old:
                fail("a calibration of %s changed a step of %s" % (cluster, old["cluster"]))
            continue
        parts, before = new["simulated_parts"], old["simulated_parts"]
        want = parts["compute_s"] + parts["optimizer_s"] + parts["compression_kernels_s"]
        job = new["with_job_compute"]
        if (abs(parts["comm_floor_s"] - (before["comm_floor_s"] + 2.0)) > 0.05
                or abs(parts["comm_s"] - comm_with_floor(parts)) > 1e-12
                or parts["comm_s"] < parts["comm_floor_s"]
                or abs(new["simulated_s"] - want - parts["comm_s"]) > 1e-9
                or abs((job["simulated_s"] - new["simulated_s"])
                       - (job["gradient_s"] + job["arithmetic_s"]
                          - parts["compute_s"] - parts["optimizer_s"])) > 1e-9):
            fail("a step did not take its calibration's communication floor: %s, before %s"
                 % (new, old["simulated_parts"]))


def described_differently(path, tmp):
    """The grid at `path` with another description, written beside the test's files: to
    --resimulate it is the same grid. Returns the grid and the file's path."""
    grid = json.load(open(path))
    grid["description"] = "the same grid, described differently"
    same = os.path.join(tmp, "same.json")
    json.dump(grid, open(same, "w"))
    return grid, same


def resimulate(clbo, src, grid, work, out, what):
    """`clbo validate GRID --resimulate WORK -o OUT -q`, which must succeed; the result."""
    r = subprocess.run([clbo, "validate", grid, "--resimulate", work, "-o", out, "-q"],
                       capture_output=True, text=True, timeout=300, cwd=src)
    if r.returncode != 0:
        fail("%s: exit %d\n%s%s" % (what, r.returncode, r.stdout, r.stderr[-3000:]))
    return json.load(open(out))


def check_resimulate(clbo, src, path, work, doc, tmp):
    """--resimulate simulates the kept measurements again: the same cases, nothing measured;
    a grid that differs only in its description is the same grid, any other field is not."""
    grid, same = described_differently(path, tmp)
    redone = resimulate(clbo, src, same, work, os.path.join(tmp, "again.json"), "--resimulate")
    if redone["cases"] != doc["cases"]:
        fail("--resimulate gave other cases than the run that measured them")
    if redone.get("resimulated", {}).get("work_folder") != work or "resimulated" in doc:
        fail("a resimulated result must say so, and only it: %s" % redone.get("resimulated"))
    # ... with the measuring run's wall time, which its own timing.wall_s is not.
    measured_wall = redone["resimulated"].get("measured_wall_s")
    total = doc["timing"]["wall_s"]
    if not isinstance(measured_wall, (int, float)) or not 0 < measured_wall <= total:
        fail("resimulated.measured_wall_s %r: not the measuring run's (%s s in all)"
             % (measured_wall, total))
    check_resimulated_inputs(clbo, src, grid, same, work, doc, tmp)


def check_resimulated_inputs(clbo, src, grid, same, work, doc, tmp):
    """What --resimulate reads from the kept folder, changed one at a time: the recorded CPU
    count, the one-rank calibrations, a calibration's steps; a malformed machine.json and
    another grid are refused. `grid` and `same` are described_differently's; `doc` is the
    folder's result as it stands."""
    # The contention is the measuring machine's: machine.json is read, not this CPU count.
    # Every contention of this run was measured on the clusters' own ranks (the calibrations,
    # the all-pairs ping-pong), so another CPU count changes no case...
    mfile = os.path.join(work, "machine.json")
    kept = json.load(open(mfile))
    if kept.get("cpus") != doc["machine"]["cpus"]:
        fail("machine.json %s disagrees with the result's machine.cpus %s"
             % (kept, doc["machine"]["cpus"]))

    def resimulated(name, cpus):
        json.dump({"cpus": cpus}, open(mfile, "w"))
        w = resimulate(clbo, src, same, work, os.path.join(tmp, name),
                       "--resimulate at %d CPUs" % cpus)
        if w["machine"]["cpus"] != cpus:
            fail("--resimulate did not record the CPU count machine.json holds")
        return w["cases"]

    # The one exception is the streaming contention's floor, max(1, p/C), which is the CPU
    # count's: a cluster whose measured factor fell below it (by noise, 1.98 for 4 copies on
    # 2 cores) may change, every other cluster's cases must not.
    def cluster_key(k):
        return (k["topology"], k["hosts"], k["ranks_per_host"], k["rate_Mbps"])
    floored = {cluster_key(dict(c["config"], rate_Mbps=c["config"]["link_Mbps"]))
               for c in doc["clusters"]
               if not c["streaming_contention"]["source"].startswith("measured")}
    wide = resimulated("wider.json", kept["cpus"] * 16)
    if len(wide) != len(doc["cases"]) or any(
            a != b for a, b in zip(wide, doc["cases"]) if cluster_key(b) not in floored):
        fail("a measured contention changed with the recorded CPU count")
    # ...while without the one-rank calibrations the kernels are slowed by p/C, the recorded
    # CPU count's.
    alone = [os.path.join(work, c["id"], "calibration-alone.json") for c in doc["clusters"]]
    for f in alone:
        os.rename(f, f + ".away")
    if resimulated("modelled.json", kept["cpus"]) == resimulated("wider2.json", kept["cpus"] * 16):
        fail("--resimulate did not simulate the CPU count machine.json records")
    for f in alone:
        os.rename(f + ".away", f)
    check_comm_floor(doc, work, lambda name: resimulated(name, kept["cpus"]))
    wider = os.path.join(tmp, "wider.json")
    json.dump({"cpus": "two"}, open(mfile, "w"))
    r = subprocess.run([clbo, "validate", same, "--resimulate", work, "-o", wider + ".bad"],
                       capture_output=True, text=True, timeout=300, cwd=src)
    if r.returncode != 2 or "machine.json" not in r.stderr or os.path.exists(wider + ".bad"):
        fail("a malformed machine.json: exit %d, %s" % (r.returncode, r.stderr))
    json.dump(kept, open(mfile, "w"))
    grid["probes"]["bulk_seconds"] = 2.0
    other = os.path.join(tmp, "other.json")
    json.dump(grid, open(other, "w"))
    refused_out = os.path.join(tmp, "refused.json")
    r = subprocess.run([clbo, "validate", other, "--resimulate", work, "-o", refused_out],
                       capture_output=True, text=True, timeout=300, cwd=src)
    if (r.returncode != 2 or "'--resimulate'" not in r.stderr or "different grid" not in r.stderr
            or os.path.exists(refused_out)):
        fail("--resimulate of another grid: exit %d, %s" % (r.returncode, r.stderr))


DATA = os.path.join("tests", "validate", "data")
REGENERATE = ("clbo validate experiments/validation/quick.json --resimulate "
              "tests/validate/data/quick-work -o tests/validate/data/quick-resimulated.json")


def test_resimulate(clbo, src):
    """The quick grid's measurements, kept by a run on this project's machine
    (tests/validate/data/README.md), simulated again: the simulated side of `clbo validate`
    end to end without any emulation, so it runs everywhere and under the sanitizers. The
    result holds what a measured one holds, is the same on a second run but for its timing,
    and equals the committed simulation of the same folder."""
    tmp = scratch(prefix="clbo-validate-resimulate-")
    work = os.path.join(tmp, "work")
    shutil.copytree(os.path.join(src, DATA, "quick-work"), work)
    path = os.path.join(src, "experiments", "validation", "quick.json")

    def kept_run(name):
        return resimulate(clbo, src, path, work, os.path.join(tmp, name),
                          "--resimulate of the kept quick run")

    doc = kept_run("first.json")
    if doc.get("resimulated", {}).get("work_folder") != work:
        fail("the result does not name the folder it was simulated from: %s"
             % doc.get("resimulated"))
    check_result(doc)

    def untimed(d):
        d = json.loads(json.dumps(d))
        del d["timing"], d["machine"]["load_average_end"]
        return d
    if untimed(kept_run("second.json")) != untimed(doc):
        fail("two simulations of the same folder differ in more than their timing")
    want = json.load(open(os.path.join(src, DATA, "quick-resimulated.json")))
    # Numbers to 1e-9 relative: the simulator's floating point may take another libm path on
    # another CPU; everything else exactly.
    diff = compare_results(src).first_difference(
        {"cases": doc["cases"], "summary": doc["summary"]},
        {"cases": want["cases"], "summary": want["summary"]}, rel_tol=1e-9)
    if diff:
        fail("the simulation of the kept quick run changed (first difference: %s is %r, want "
             "%r). If the model changed on purpose, regenerate the expected result from the "
             "source folder with\n  %s\nand say why in the commit." % (diff + (REGENERATE,)))
    grid, same = described_differently(path, tmp)
    check_resimulated_inputs(clbo, src, grid, same, work, doc, tmp)
    print("ok: the kept quick run simulated again: %d cases as committed" % len(doc["cases"]))


def main():
    what, clbo, src = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    if what == "bad-input":
        test_bad_input(clbo)
    elif what == "check":
        test_check(clbo, src)
    elif what == "repeatability":
        test_repeatability(clbo, src)
    elif what == "quick":
        test_quick(clbo, src)
    elif what == "resimulate":
        test_resimulate(clbo, src)
    else:
        fail("unknown test %r" % what)


if __name__ == "__main__":
    main()
