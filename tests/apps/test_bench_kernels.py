"""`clbo bench kernels` and bench_kernels_cpu behave as any Google Benchmark 1.7.1 binary.

Usage: test_bench_kernels.py BIN_DIR   (the folder holding clbo and bench_kernels_cpu)

- --benchmark_list_tests lists without measuring anything first (no streaming reference);
- the user's --benchmark_min_time is not overridden by a per-benchmark MinTime (Google
  Benchmark then names the benchmark ".../min_time:X/..." and ignores the flag);
- one --benchmark_out file and a -o folder are not both taken;
- --no_reference (clbo validate's streaming contention) measures no reference and rotates one
  buffer set.
Running a benchmark measures the streaming reference first (tens of seconds), so the saved
JSON's structure is tested on the transform alone (test_bench_kernels_json.cpp).
"""
import os
import subprocess
import sys
import tempfile
import unittest

BIN = None


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

    def test_cuda_names_do_not_depend_on_the_flags(self):
        """bench_kernels_cuda (built where nvcc is, listed without a device): no Iterations()
        or MinTime() in its names, so runs with and without --benchmark_min_time pair up in
        tools/compare.py, and nothing but the names on stdout."""
        cuda = os.path.join(BIN, "bench_kernels_cuda")
        if not os.path.exists(cuda):
            self.skipTest("bench_kernels_cuda not built (no nvcc at configure time)")
        plain = run([cuda, "--benchmark_list_tests"]).stdout.split()
        timed = run([cuda, "--benchmark_list_tests", "--benchmark_min_time=0.5"]).stdout.split()
        self.assertIn("BM_Compress/16777216/manual_time", plain)
        self.assertEqual(plain, timed)
        self.assertFalse([n for n in plain if "iterations:" in n or "min_time:" in n], plain)
        self.assertTrue(all(n.startswith("BM_") for n in plain), plain)

    def test_no_reference_measures_the_kernel_alone(self):
        import json
        with tempfile.TemporaryDirectory() as d:
            r = run([os.path.join(BIN, "clbo"), "bench", "kernels", "--cpu", "-o", d,
                     "--no_reference", "--benchmark_filter=^BM_ef_sumsq/1048576/",
                     "--benchmark_min_time=0.01"])
            self.assertNotIn("streaming reference", r.stderr)
            with open(os.path.join(d, "kernels-cpu.json")) as f:
                out = json.load(f)
        self.assertEqual(out["context"]["copy_reference"], "none (--no_reference)")
        rows = out["benchmarks"]
        self.assertEqual([b["name"] for b in rows], ["BM_ef_sumsq/1048576/real_time"])
        self.assertEqual(rows[0]["buffer_sets"], 1)
        self.assertGreater(rows[0]["items_per_second"], 0)
        self.assertNotIn("frac_of_copy_bw", rows[0])

    def test_fixed_iterations_behind_a_start_barrier(self):
        """clbo validate's contention copies: --iterations=N gives one run of N iterations,
        --start_barrier=DIR,N leaves a ready file; malformed values are refused by name."""
        import json
        with tempfile.TemporaryDirectory() as d:
            barrier = os.path.join(d, "barrier")
            os.mkdir(barrier)
            run([os.path.join(BIN, "clbo"), "bench", "kernels", "--cpu", "-o", d,
                 "--no_reference", "--benchmark_filter=^BM_ef_sumsq/1048576/", "--iterations=4",
                 f"--start_barrier={barrier},1"])
            with open(os.path.join(d, "kernels-cpu.json")) as f:
                rows = json.load(f)["benchmarks"]
            self.assertEqual(len(os.listdir(barrier)), 1)
        self.assertEqual([(b["name"], b["iterations"]) for b in rows],
                         [("BM_ef_sumsq/1048576/iterations:4/real_time", 4)])
        cpu = os.path.join(BIN, "bench_kernels_cpu")
        for bad in ("--iterations=0", "--iterations=x", "--start_barrier=/tmp", "--start_barrier=d,0"):
            r = run([cpu, bad, "--benchmark_list_tests"], expect=2)
            self.assertIn(bad.split("=", 1)[1], r.stderr)

    def test_one_out_file_and_a_folder_conflict(self):
        r = run([os.path.join(BIN, "clbo"), "bench", "kernels", "--cpu", "-o", "/tmp",
                 "--benchmark_out=/tmp/x.json"], expect=2)
        self.assertIn("either -o DIR or --benchmark_out=FILE", r.stderr)


if __name__ == "__main__":
    BIN = sys.argv.pop(1)
    unittest.main()
