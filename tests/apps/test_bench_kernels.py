"""`clbo bench kernels` and bench_kernels_cpu behave as any Google Benchmark 1.7.1 binary.

Usage: test_bench_kernels.py BIN_DIR   (the folder holding clbo and bench_kernels_cpu)

- --benchmark_list_tests lists without measuring anything first (no streaming reference);
- the user's --benchmark_min_time is not overridden by a per-benchmark MinTime (Google
  Benchmark then names the benchmark ".../min_time:X/..." and ignores the flag);
- the saved JSON (--benchmark_out=FILE through clbo, -o DIR) is Google Benchmark's own, with
  what tools/compare.py reads (top-level "benchmarks" with name, real_time, cpu_time,
  time_unit, run_type) and clbo's metadata in context.clbo.
Structure only: no timing is asserted.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

BIN = None
# One small in-cache case, run for as short a time as Google Benchmark allows.
TINY = ["--benchmark_filter=^BM_tensor_sumsq/1048576/", "--benchmark_min_time=0.001"]


def run(argv, expect=0):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if r.returncode != expect:
        raise AssertionError(f"{argv}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return r


class GoogleBenchmarkHabits(unittest.TestCase):
    def test_list_tests_measures_nothing(self):
        r = run([os.path.join(BIN, "bench_kernels_cpu"), "--benchmark_list_tests"])
        names = r.stdout.split()
        self.assertIn("BM_ef_sumsq/1048576/real_time", names)
        self.assertIn("BM_ef_sumsq/67108864/real_time", names)
        self.assertTrue(any(n.startswith("BM_memcpy/") for n in names), names)
        self.assertFalse([n for n in names if "min_time:" in n], "a MinTime() would override "
                         "--benchmark_min_time")
        self.assertNotIn("streaming reference", r.stderr)
        with tempfile.TemporaryDirectory() as d:
            r = run([os.path.join(BIN, "clbo"), "bench", "kernels", "--cpu", "-o", d,
                     "--benchmark_list_tests", "--benchmark_filter=compact"])
            self.assertEqual(r.stdout.split(), [n for n in names if "compact" in n])
            self.assertEqual(os.listdir(d), [])  # listing writes no results

    def test_saved_json_is_what_compare_py_reads(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "mine.json")
            run([os.path.join(BIN, "clbo"), "bench", "kernels", "--cpu", *TINY,
                 "--benchmark_out=" + out])
            doc = json.load(open(out))
            self.assertEqual(doc["schema"], "clbo.bench.kernels/2")
            ctx = doc["context"]
            for key in ("date", "executable", "num_cpus", "copy_bytes_per_second"):
                self.assertIn(key, ctx)
            self.assertTrue(ctx["clbo"]["measured"])
            self.assertEqual(ctx["clbo"]["config"]["binary"], "bench_kernels_cpu")
            self.assertEqual(ctx["clbo"]["config"]["args"], TINY)
            self.assertIn("host", ctx["clbo"]["environment"])
            (b,) = doc["benchmarks"]
            self.assertEqual(b["name"], "BM_tensor_sumsq/1048576/real_time")
            self.assertEqual((b["run_type"], b["time_unit"]), ("iteration", "us"))
            for key in ("real_time", "cpu_time", "iterations", "bytes_per_second",
                        "items_per_second", "min_bytes_per_elem"):
                self.assertIsInstance(b[key], (int, float), key)
            # -o DIR writes the same kind of file under the name the results folder uses.
            run([os.path.join(BIN, "clbo"), "bench", "kernels", "--cpu", "-o", d, *TINY])
            again = json.load(open(os.path.join(d, "kernels-cpu.json")))
            self.assertEqual([x["name"] for x in again["benchmarks"]], [b["name"]])
            self.assertEqual(sorted(os.listdir(d)), ["kernels-cpu.json", "mine.json"])

    def test_one_out_file_and_a_folder_conflict(self):
        r = run([os.path.join(BIN, "clbo"), "bench", "kernels", "--cpu", "-o", "/tmp",
                 "--benchmark_out=/tmp/x.json"], expect=2)
        self.assertIn("either -o DIR or --benchmark_out=FILE", r.stderr)


if __name__ == "__main__":
    BIN = sys.argv.pop(1)
    unittest.main()
