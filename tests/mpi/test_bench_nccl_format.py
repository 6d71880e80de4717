"""`clbo bench collectives` output read the way nccl-tests users read all_reduce_perf's.

Usage: test_bench_nccl_format.py BENCH_BINARY

The parser below is written as scripts for nccl-tests output are: skip the lines that start
with '#', split each row on whitespace and take the columns by index (nccl-tests' order:
size, count, type, redop, root, then time, algbw, busbw, #wrong out of place and in place),
and grep the footer's "# Out of bounds values" and "# Avg bus bandwidth" lines. clbo's own
columns come after nccl-tests' and must not move them.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

BIN = None


def run(*args, expect=0):
    r = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=60)
    if r.returncode != expect:
        raise AssertionError(f"{args}: exit {r.returncode}, expected {expect}\n{r.stdout}{r.stderr}")
    return r


def nccl_tests_rows(text):
    """The rows, as an nccl-tests user parses them: by whitespace column index."""
    rows = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        f = line.split()
        rows.append({
            "size": int(f[0]), "count": int(f[1]), "type": f[2], "redop": f[3], "root": int(f[4]),
            "oop_time": float(f[5]), "oop_algbw": float(f[6]), "oop_busbw": float(f[7]),
            "oop_wrong": f[8],
            "ip_time": float(f[9]), "ip_algbw": float(f[10]), "ip_busbw": float(f[11]),
            "ip_wrong": f[12],
            "fields": f,
        })
    return rows


def footer(text):
    oob = re.search(r"^# Out of bounds values\s*:\s*(\d+)\s+(OK|FAILED)", text, re.M)
    avg = re.search(r"^# Avg bus bandwidth\s*:\s*(\S+)", text, re.M)
    return int(oob.group(1)), oob.group(2), float(avg.group(1))


class NcclTestsFormat(unittest.TestCase):
    def test_rows_columns_and_footer_read_as_nccl_tests(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            out = run("-t", "3", "-b", "96", "-e", "6K", "-f", "4", "-n", "2", "-w", "1",
                      "-J", path).stdout
            with open(path) as f:
                doc = json.load(f)
        rows = nccl_tests_rows(out)
        self.check_nccl_tests_json(doc, rows, checked=True)
        self.assertEqual([r["size"] for r in rows], [96, 384, 1536, 6144])
        busbw = []
        for r in rows:
            self.assertEqual(r["count"], r["size"] // 4)
            self.assertEqual((r["type"], r["redop"], r["root"]), ("float", "sum", -1))
            self.assertEqual((r["oop_wrong"], r["ip_wrong"]), ("0", "0"))
            for half in ("oop", "ip"):
                self.assertGreater(r[half + "_time"], 0)
                # algbw = size / time (GB/s from bytes and microseconds), busbw = 2(p-1)/p x algbw
                want = r["size"] / r[half + "_time"] / 1e3
                self.assertAlmostEqual(r[half + "_algbw"], want, delta=0.011 + 0.02 * want)
                self.assertAlmostEqual(r[half + "_busbw"], r[half + "_algbw"] * 4 / 3,
                                       delta=0.011 + 0.02 * want)
                busbw.append(r[half + "_busbw"])
            # clbo's columns come last: eq_busbw (N/A for a dense allreduce) twice, wire bytes.
            self.assertEqual(len(r["fields"]), 16)
            self.assertEqual(r["fields"][13:15], ["N/A", "N/A"])
        count, verdict, avg = footer(out)
        self.assertEqual((count, verdict), (0, "OK"))
        self.assertAlmostEqual(avg, sum(busbw) / len(busbw), delta=0.02 + 0.05 * avg)
        header = [l for l in out.splitlines() if l.startswith("#") and " redop " in l][0].split()
        self.assertEqual(header[1:14], ["size", "count", "type", "redop", "root", "time", "algbw",
                                        "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"])
        self.assertEqual(header[14:], ["eq_busbw", "eq_busbw", "wire_bytes"])

    def check_nccl_tests_json(self, doc, rows, checked):
        """The -J file read as a script written for nccl-tests' JSON (src/util.cu, version 3)
        reads it: one record per table row, with the table's numbers."""
        self.assertEqual(doc["version"], 3)
        self.assertRegex(doc["start_time"], r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
        self.assertRegex(doc["end_time"], r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
        self.assertIn("-J", doc["args"])
        self.assertIsNone(doc["nccl_version"])  # the local backend runs no NCCL
        cfg = doc["config"]
        for key in ("nthreads", "ngpus", "minimum_bytes", "maximum_bytes", "warmup_iters",
                    "iterations", "aggregated_iterations", "validation", "graph",
                    "blocking_collectives", "per_iter_timing", "per_iter_skip", "parallel_init"):
            self.assertIn(key, cfg)
        self.assertEqual(cfg["minimum_bytes"], rows[0]["size"])
        self.assertEqual(len(doc["results"]), len(rows))
        for rec, r in zip(doc["results"], rows):
            self.assertEqual((rec["size"], rec["count"], rec["type"], rec["redop"]),
                             (r["size"], r["count"], r["type"], r["redop"]))
            self.assertEqual(int(rec["root"]), r["root"])
            self.assertEqual(rec["actual_iterations"], cfg["iterations"])
            for half, key in (("out_of_place", "oop"), ("in_place", "ip")):
                h = rec[half]
                for field, col in (("time", "_time"), ("alg_bw", "_algbw"), ("bus_bw", "_busbw")):
                    self.assertAlmostEqual(h[field], r[key + col], delta=0.006 + 1e-3 * h[field])
                if checked:
                    self.assertEqual(h["nwrong"], float(r[key + "_wrong"]))
                else:
                    self.assertIsNone(h["nwrong"])
        self.assertEqual(doc["out_of_bounds"]["count"], 0)

    def test_datatype_all_cycles_no_check_and_json(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            out = run("--collective", "alltoall", "-t", "2", "-d", "all", "-b", "64", "-e", "64",
                      "-N", "2", "-c", "0", "-n", "1", "-J", path).stdout
            rows = nccl_tests_rows(out)
            types = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float",
                     "double", "bfloat16", "f8e4m3", "f8e5m2"]
            # nccl-tests' order: per type every size -N times (here one size, twice)
            self.assertEqual([r["type"] for r in rows], [t for t in types for _ in (1, 2)])
            for r in rows:
                self.assertEqual((r["redop"], r["oop_wrong"], r["ip_wrong"]), ("none", "N/A", "N/A"))
                self.assertEqual(r["size"], 64)
            with open(path) as f:
                doc = json.load(f)
            self.assertEqual(doc["schema"], "clbo.bench.collectives/1")
            self.assertEqual(len(doc["rows"]), 24)
            self.check_nccl_tests_json(doc, rows, checked=False)
            self.assertEqual(doc["out_of_bounds"], {"count": 0, "okay": True})
            self.assertIn("bandwidth", doc["average_bus_bandwidth"])

    def test_timestamps_keep_nccl_tests_columns(self):
        out = run("-b", "4K", "-e", "4K", "-n", "1", "-S", "1", "-C", "1").stdout
        (r,) = nccl_tests_rows(out)
        self.assertRegex(" ".join(r["fields"][13:15]), r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
        self.assertIn(" cputime ", out)

    def test_flags_that_cannot_apply_are_rejected_naming_their_meaning(self):
        for args, says in [
            (["-o", "results.json"], "-J/--output_file"),
            (["-o", "prod"], "reduce with sum"),
            (["-G", "1"], "CUDA graph"),
            (["-I", "1"], "per-iteration"),
            (["-r", "1"], "rooted collectives"),
            (["-J", "out.txt"], "only .json"),
        ]:
            r = run(*args, expect=2)
            self.assertIn(says, r.stderr, args)


if __name__ == "__main__":
    BIN = sys.argv.pop(1)
    unittest.main()
