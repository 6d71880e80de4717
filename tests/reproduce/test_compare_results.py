#!/usr/bin/python3
"""The comparer of the regeneration test must catch every changed result and nothing else."""
import json
import os
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_results  # noqa: E402

RESULT = {
    "schema": "clbo.simulate/1",
    "environment": {"git_hash": "abc", "host": "a"},
    "config": {"simulate": {"gpus": [16, 64]}},
    "runs": [
        {"optimizer": "Adam", "simulated": {"samples_per_s": 1234.5, "speedup": None},
         "step_kinds": [{"simulated": {"time_ms": 10.25}, "timing": {"wall_s": 0.5}}],
         "timing": {"wall_s": 1.0, "cpu_s": 0.9}},
    ],
    "timing": {"wall_s": 2.0},
}


class CompareResultsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.committed = self.write("committed.json", RESULT)

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, doc, raw=None):
        path = os.path.join(self.dir.name, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(raw if raw is not None else json.dumps(doc))
        return path

    def changed(self, edit):
        doc = json.loads(json.dumps(RESULT))
        edit(doc)
        return compare_results.compare_files(self.committed, self.write("fresh.json", doc))

    def test_identical_files_agree(self):
        self.assertIsNone(self.changed(lambda d: None))

    def test_a_changed_simulated_number_is_detected_and_named(self):
        def edit(d):
            d["runs"][0]["simulated"]["samples_per_s"] = 1234.6
        diff = self.changed(edit)
        self.assertIsNotNone(diff)
        self.assertIn("runs[0].simulated.samples_per_s", diff)
        self.assertIn("1234.5", diff)

    def test_a_changed_nested_number_in_an_array_is_detected(self):
        def edit(d):
            d["runs"][0]["step_kinds"][0]["simulated"]["time_ms"] = 10.250000000000002
        self.assertIn("step_kinds[0].simulated.time_ms", self.changed(edit))

    def test_a_changed_config_or_added_field_is_detected(self):
        self.assertIn("config.simulate.gpus", self.changed(
            lambda d: d["config"]["simulate"]["gpus"].append(256)))
        self.assertIn("runs[0].simulated.comm_steps", self.changed(
            lambda d: d["runs"][0]["simulated"].update(comm_steps=5)))

    def test_a_null_becoming_a_number_is_detected(self):
        self.assertIsNotNone(self.changed(
            lambda d: d["runs"][0]["simulated"].update(speedup=1.0)))

    def test_timing_fields_at_any_depth_are_ignored(self):
        def edit(d):
            d["timing"]["wall_s"] = 99.0
            d["runs"][0]["timing"] = {"wall_s": 7.0, "cpu_s": 6.0, "new": 1}
            d["runs"][0]["step_kinds"][0]["timing"]["wall_s"] = 3.0
        self.assertIsNone(self.changed(edit))

    def test_the_top_level_environment_is_ignored(self):
        self.assertIsNone(self.changed(
            lambda d: d["environment"].update(git_hash="def", host="b")))

    def test_a_relative_tolerance_compares_numbers_only(self):
        first = compare_results.first_difference
        a = {"t": [1.0, 2, {"n": "x", "ok": True}]}
        # Within 1e-9: equal, an int and a float alike; beyond it: the path and both values.
        self.assertIsNone(first(a, {"t": [1.0 + 1e-12, 2.0, {"n": "x", "ok": True}]},
                                rel_tol=1e-9))
        self.assertEqual(first(a, {"t": [1.000001, 2, {"n": "x", "ok": True}]}, rel_tol=1e-9),
                         ("$.t[0]", 1.0, 1.000001))
        # Exactly without it; strings and booleans exactly with it (True is not the number 1).
        self.assertEqual(first(a, {"t": [1.0, 2.0, {"n": "x", "ok": True}]}),
                         ("$.t[1]", 2, 2.0))
        self.assertEqual(first(a, {"t": [1.0, 2, {"n": "y", "ok": True}]}, rel_tol=1e-9)[0],
                         "$.t[2].n")
        self.assertEqual(first(a, {"t": [1.0, 2, {"n": "x", "ok": 1}]}, rel_tol=1e-9)[0],
                         "$.t[2].ok")

    def test_key_order_does_not_matter(self):
        reordered = dict(reversed(list(RESULT.items())))
        fresh = self.write("fresh.json", None, raw=json.dumps(reordered, indent=4))
        self.assertIsNone(compare_results.compare_files(self.committed, fresh))

    def test_a_missing_file_is_an_error_naming_it(self):
        missing = os.path.join(self.dir.name, "results", "paper", "x.json")
        with self.assertRaises(compare_results.ResultsFileError) as e:
            compare_results.compare_files(missing, self.committed)
        self.assertIn(missing, str(e.exception))
        self.assertIn("does not exist", str(e.exception))

    def test_a_corrupt_file_is_an_error_naming_it(self):
        corrupt = self.write("corrupt.json", None, raw='{"runs": [')
        with self.assertRaises(compare_results.ResultsFileError) as e:
            compare_results.compare_files(self.committed, corrupt)
        self.assertIn(corrupt, str(e.exception))

    def test_the_command_line_exit_codes(self):
        same = self.write("same.json", RESULT)
        self.assertEqual(compare_results.main(["x", self.committed, same]), 0)
        other = self.write("other.json", dict(RESULT, runs=[]))
        self.assertEqual(compare_results.main(["x", self.committed, other]), 1)
        self.assertEqual(compare_results.main(["x", self.committed, "/nonexistent.json"]), 2)


if __name__ == "__main__":
    unittest.main()
