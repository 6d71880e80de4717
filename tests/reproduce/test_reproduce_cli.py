#!/usr/bin/python3
"""`clbo reproduce` without the long work: the plan it runs, and the inputs it refuses before
any work starts (a bad experiment, a bad --root, a bad --jobs), leaving no results behind.

    test_reproduce_cli.py --clbo build/bin/clbo --source .
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ARGS = None


def clbo(*args, cwd=None):
    return subprocess.run([ARGS.clbo, *args], cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)


def files_under(folder):
    return sorted(os.path.relpath(os.path.join(d, f), folder)
                  for d, _, names in os.walk(folder) for f in names)


class ReproduceCliTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="clbo-reproduce-test-")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def small_root(self):
        """A root with one valid simulation experiment, the smoke experiment, no claim specs."""
        root = os.path.join(self.dir, "root")
        for kind in ("sim", "convergence", "paper"):
            os.makedirs(os.path.join(root, "experiments", kind))
        shutil.copy(os.path.join(ARGS.source, "experiments/sim/table1-calibration.json"),
                    os.path.join(root, "experiments/sim"))
        shutil.copy(os.path.join(ARGS.source, "experiments/convergence/smoke.json"),
                    os.path.join(root, "experiments/convergence"))
        return root

    def test_the_plan_covers_every_experiment_and_every_phase(self):
        r = clbo("reproduce", "--dry-run", "--root", ARGS.source, "--out", self.dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        for name in sorted(os.listdir(os.path.join(ARGS.source, "experiments/sim"))):
            if name.endswith(".json"):
                self.assertIn(f"simulate experiments/sim/{name} -o", r.stdout)
                self.assertIn(f"simulate --check experiments/sim/{name}", r.stdout)
        paper = os.path.join(ARGS.source, "experiments/paper")
        for name in sorted(os.listdir(paper)) if os.path.isdir(paper) else []:
            with open(os.path.join(paper, name), encoding="utf-8") as f:
                simulated = "simulate" in json.load(f)
            self.assertEqual(f"simulate experiments/paper/{name} -o" in r.stdout, simulated, name)
        self.assertIn("report --check-specs", r.stdout)
        self.assertIn("train experiments/convergence/smoke.json -o", r.stdout)
        self.assertNotIn("adam_family", r.stdout)  # only the smoke run without --full
        self.assertIn("bench kernels --cpu", r.stdout)
        self.assertIn("--backend local --collective compressed", r.stdout)
        self.assertIn("clbo report", r.stdout)
        self.assertIn("clbo plot", r.stdout)
        self.assertEqual(os.listdir(self.dir), [], "a dry run writes nothing")

    def test_full_runs_every_convergence_experiment_and_the_summary(self):
        r = clbo("reproduce", "--dry-run", "--full", "--root", ARGS.source, "--out", self.dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        for name in os.listdir(os.path.join(ARGS.source, "experiments/convergence")):
            if name.endswith(".json"):
                self.assertIn(f"train experiments/convergence/{name} -o", r.stdout)
        self.assertIn("train --summary", r.stdout)
        self.assertIn("SUMMARY.md", r.stdout)

    def test_a_bad_experiment_stops_everything_before_any_work(self):
        root = self.small_root()
        with open(os.path.join(root, "experiments/sim/bad.json"), "w") as f:
            json.dump({"simulate": {"workload": "bert-large-seq128", "clusters": ["paper-eth-v100"],
                                    "gpus": [16], "micro_batch": 16, "optimizers": [
                                        {"optimizer": {"type": "Adam", "params": {}}}],
                                    "fidelty": "fast"}}, f)
        out = os.path.join(self.dir, "out")
        r = clbo("reproduce", "--root", root, "--out", out, "--jobs", "1")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("FAILED", r.stderr)
        self.assertIn("fidelty", r.stderr)  # the log tail names the bad field
        self.assertIn("experiments/sim/bad.json", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(out, "results")), files_under(out))
        self.assertFalse(os.path.exists(os.path.join(out, "tables", "paper.md")))
        self.assertTrue(os.path.exists(os.path.join(out, "logs", "reproduce.log")))

    def test_a_corrupt_claim_spec_is_refused_naming_it(self):
        root = self.small_root()
        bad = os.path.join(root, "experiments/paper/broken.json")
        with open(bad, "w") as f:
            f.write('{"name": "broken", "claims": [')
        out = os.path.join(self.dir, "out")
        r = clbo("reproduce", "--root", root, "--out", out)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("broken.json", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(out, "results")))

    def test_an_interrupt_stops_every_running_step(self):
        root = self.small_root()
        out = os.path.join(self.dir, "out")
        proc = subprocess.Popen([ARGS.clbo, "reproduce", "--root", root, "--out", out],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        logs = os.path.join(out, "logs")
        deadline = time.monotonic() + 60
        while not any("train" in f for f in (os.listdir(logs) if os.path.isdir(logs) else [])):
            self.assertLess(time.monotonic(), deadline, "the train step never started")
            self.assertIsNone(proc.poll(), proc.stderr.read() if proc.poll() else "")
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 130, err)
        self.assertIn("interrupted", err)
        self.assertFalse(os.path.exists(os.path.join(out, "results", "convergence", "smoke.json")))
        self.assertFalse(os.path.exists(os.path.join(out, "tables", "paper.md")))
        leftovers = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if out.encode() in f.read():
                        leftovers.append(pid)
            except OSError:
                pass
        self.assertEqual(leftovers, [], "steps still running after the interrupt")

    def test_a_root_without_experiments_is_refused(self):
        r = clbo("reproduce", "--dry-run", "--root", self.dir)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--root", r.stderr)
        self.assertIn("experiments/", r.stderr)

    def test_bad_jobs_is_refused(self):
        r = clbo("reproduce", "--dry-run", "--root", ARGS.source, "--jobs", "-3")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--jobs", r.stderr)

    def test_check_flags_validate_without_writing(self):
        r = clbo("simulate", "--check", "experiments/sim/table1-calibration.json",
                 cwd=ARGS.source)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ok", r.stdout)
        bad = os.path.join(self.dir, "bad.json")
        with open(bad, "w") as f:
            json.dump({"simulate": {"workload": "bert-larg"}}, f)
        r = clbo("simulate", "--check", bad, cwd=self.dir)
        self.assertEqual(r.returncode, 2)
        self.assertIn("bert-larg", r.stderr)
        self.assertEqual(os.listdir(self.dir), ["bad.json"])

    def test_train_check_validates_the_config_and_the_data(self):
        smoke = os.path.join(ARGS.source, "experiments/convergence/smoke.json")
        r = clbo("train", "--check", smoke, cwd=self.dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        missing = os.path.join(self.dir, "no-data")
        r = clbo("train", "--check", smoke, "--data-dir", missing, cwd=self.dir)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(missing, r.stderr)
        self.assertEqual(os.listdir(self.dir), [], "--check writes nothing")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--clbo", required=True)
    parser.add_argument("--source", required=True)
    ARGS, rest = parser.parse_known_args()
    ARGS.clbo, ARGS.source = os.path.abspath(ARGS.clbo), os.path.abspath(ARGS.source)
    unittest.main(argv=[sys.argv[0], *rest])
