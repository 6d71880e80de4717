#!/usr/bin/python3
"""scripts/export_layout.py on a stand-in for a PyTorch module (no torch needed).

    test_export_layout.py --script scripts/export_layout.py [--clbo build/bin/clbo]

The stand-in is a plain class whose named_parameters() yields (name, object with .shape),
as torch.nn.Module does. With --clbo, the exported layout and workload are also run through
`clbo simulate` on a GPU given only by its datasheet figures.
"""
import argparse
import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

sys.dont_write_bytecode = True
ARGS = None

# The module the script imports: a two-layer MLP with a tied embedding and a scalar, and
# constructors that fail in the ways users' models do. build() leaves a marker, so a test
# can tell whether the model was built before an input error stopped the run.
STANDIN = textwrap.dedent('''
    import os

    class Size(tuple):
        """Like torch.Size: a tuple of ints."""

    class Param:
        def __init__(self, *shape, requires_grad=True):
            self.shape = Size(shape)
            self.requires_grad = requires_grad

    class Mlp:
        def __init__(self, hidden=4):
            self.params = [
                ("embed.weight", Param(10, hidden)),
                ("fc1.weight", Param(3 * hidden, hidden)),
                ("fc1.bias", Param(3 * hidden)),
                ("frozen.weight", Param(2, 2, requires_grad=False)),
                ("temperature", Param()),
            ]

        def named_parameters(self):
            yield from self.params

    def build(hidden=4):
        open(os.environ["STANDIN_MARKER"], "w").close()
        return Mlp(hidden)

    def zero_dim():
        m = Mlp()
        m.params.append(("broken.weight", Param(3, 0)))
        return m

    def float_dim():
        m = Mlp()
        m.params.append(("broken.weight", Param(3, 2.5)))
        return m

    def no_params():
        return object()

    not_callable = 3
''')


def load_script():
    spec = importlib.util.spec_from_file_location("export_layout", ARGS.script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ExportLayoutTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        with open(os.path.join(self.dir, "standin.py"), "w", encoding="utf-8") as f:
            f.write(STANDIN)
        self.marker = os.path.join(self.dir, "built")
        self.env = dict(os.environ, PYTHONPATH=self.dir, STANDIN_MARKER=self.marker,
                        PYTHONDONTWRITEBYTECODE="1")

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def run_script(self, *args):
        """The script as a user runs it: a separate python3 process."""
        return subprocess.run([sys.executable, "-B", ARGS.script, *args], cwd=self.dir,
                              env=self.env, capture_output=True, text=True, timeout=60)

    def call_main(self, *args):
        """main() in this process (fast): the same result as run_script."""
        script = load_script()
        err = io.StringIO()
        old_env = os.environ.get("STANDIN_MARKER")
        os.environ["STANDIN_MARKER"] = self.marker
        sys.path.insert(0, self.dir)
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                try:
                    rc = script.main(list(args))
                except SystemExit as e:  # argparse's own errors
                    rc = e.code
        finally:
            sys.path.remove(self.dir)
            sys.modules.pop("standin", None)
            if old_env is None:
                os.environ.pop("STANDIN_MARKER")
            else:
                os.environ["STANDIN_MARKER"] = old_env
        return subprocess.CompletedProcess(args, rc, "", err.getvalue())

    def assert_input_error(self, run, *fragments):
        self.assertEqual(run.returncode, 2, run.stderr)
        for frag in fragments:
            self.assertIn(frag, run.stderr)
        self.assertEqual(sorted(os.listdir(self.dir)), ["built", "standin.py"]
                         if os.path.exists(self.marker) else ["standin.py"],
                         "an input error leaves nothing written")

    def test_layout_lists_named_parameters_in_order(self):
        run = self.run_script("standin:build", "--kwargs", '{"hidden": 8}', "-o",
                              self.path("layout.json"))
        self.assertEqual(run.returncode, 0, run.stderr)
        with open(self.path("layout.json"), encoding="utf-8") as f:
            doc = json.load(f)
        self.assertEqual(doc, {"tensors": [
            {"name": "embed.weight", "shape": [10, 8], "size": 80},
            {"name": "fc1.weight", "shape": [24, 8], "size": 192},
            {"name": "fc1.bias", "shape": [24], "size": 24},
            {"name": "frozen.weight", "shape": [2, 2], "size": 4},
            {"name": "temperature", "shape": [], "size": 1},
        ]})
        self.assertIn("5 tensors, 301 parameters", run.stdout)

    def test_trainable_only_drops_frozen_parameters(self):
        run = self.call_main("standin:build", "--trainable-only", "-o", self.path("l.json"))
        self.assertEqual(run.returncode, 0, run.stderr)
        with open(self.path("l.json"), encoding="utf-8") as f:
            names = [t["name"] for t in json.load(f)["tensors"]]
        self.assertNotIn("frozen.weight", names)
        self.assertEqual(len(names), 4)

    def test_layout_of_from_python(self):
        script = load_script()
        sys.path.insert(0, self.dir)
        os.environ["STANDIN_MARKER"] = self.marker
        try:
            standin = importlib.import_module("standin")
            doc = script.layout_of(standin.build(2))
        finally:
            sys.path.remove(self.dir)
            sys.modules.pop("standin", None)
        self.assertEqual([t["size"] for t in doc["tensors"]], [20, 12, 6, 4, 1])
        with self.assertRaises(script.InputError):
            script.layout_of(object())

    def test_workload_uses_the_layout_and_flops(self):
        os.mkdir(self.path("w"))
        run = self.call_main("standin:build", "-o", self.path("w/layout.json"),
                              "--workload-out", self.path("w/mlp.json"), "--name", "mlp",
                              "--fwd-flops-per-sample", "1e9", "--efficiency", "0.4",
                              "--seq-len", "16", "--source", "counted by hand")
        self.assertEqual(run.returncode, 0, run.stderr)
        with open(self.path("w/mlp.json"), encoding="utf-8") as f:
            w = json.load(f)
        self.assertEqual(w["layout"], "layout.json")  # beside the workload
        self.assertEqual(w["fwd_flops_per_sample"], 1e9)
        self.assertEqual(w["seq_len"], 16)
        self.assertEqual(w["compute"], {"from_flops": {"efficiency": 0.4,
                                                       "source": "counted by hand"}})

    def test_bad_model_references(self):
        cases = [
            ("nocolon", "MODEL = 'nocolon'", "MODULE:CALLABLE"),
            ("missing_module:build", "MODEL = 'missing_module:build'", "cannot import"),
            ("standin:nothere", "MODEL = 'standin:nothere'", "no attribute nothere"),
            ("standin:not_callable", "MODEL = 'standin:not_callable'", "not callable"),
            ("standin:no_params", "model = 'object'", "named_parameters"),
            ("standin:zero_dim", "parameter broken.weight.shape = [3, 0]", "positive integer"),
            ("standin:float_dim", "parameter broken.weight.shape = [3, 2.5]", "positive integer"),
        ]
        for model, *fragments in cases:
            with self.subTest(model=model):
                self.assert_input_error(self.call_main(model, "-o", self.path("l.json")),
                                        *fragments)

    def test_bad_options_stop_before_the_model_is_built(self):
        out = ["-o", self.path("l.json")]
        wl = ["--workload-out", self.path("w.json"), "--name", "m",
              "--fwd-flops-per-sample", "1e9"]
        cases = [
            (out + ["--kwargs", "[1]"], "--kwargs = '[1]'", "JSON object"),
            (out + ["--kwargs", "{bad"], "--kwargs = '{bad'", "not JSON"),
            (["-o", self.path("nofolder/l.json")], "--out", "does not exist"),
            (["-o", self.dir], "--out", "is a folder"),
            (out + wl + ["--efficiency", "1.5"], "--efficiency = 1.5", "(0, 1]"),
            (out + wl + ["--efficiency", "0"], "--efficiency = 0.0", "(0, 1]"),
            (out + wl, "--efficiency = 'missing'", "required by --workload-out"),
            (out + ["--efficiency", "0.5"], "--efficiency = 0.5", "only used with"),
            (out + ["--workload-out", self.path("w.json"), "--name", "m", "--efficiency", "0.5",
                    "--fwd-flops-per-sample", "-1"], "--fwd-flops-per-sample = -1.0", "(0, 1e18]"),
        ]
        for extra, *fragments in cases:
            with self.subTest(args=extra):
                run = self.call_main("standin:build", *extra)
                self.assert_input_error(run, *fragments)
                self.assertFalse(os.path.exists(self.marker), "the model was built first")

    def test_kwargs_the_model_rejects(self):
        run = self.call_main("standin:build", "--kwargs", '{"width": 3}', "-o",
                              self.path("l.json"))
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("--kwargs", run.stderr)
        self.assertIn("rejected them", run.stderr)
        self.assertFalse(os.path.exists(self.path("l.json")))

    def test_clbo_simulates_the_exported_workload_on_a_user_gpu(self):
        if not ARGS.clbo:
            self.skipTest("no --clbo given")
        run = self.run_script("standin:build", "--kwargs", '{"hidden": 64}', "-o",
                              self.path("layout.json"), "--workload-out", self.path("mlp.json"),
                              "--name", "mlp", "--fwd-flops-per-sample", "2e9",
                              "--efficiency", "0.5")
        self.assertEqual(run.returncode, 0, run.stderr)
        cluster = {"name": "two-l40s", "gpu": {"name": "L40S", "fp16_tflops": 362,
                                              "hbm_TBps": 0.864, "source": "test figures"},
                   "nodes": 2, "gpus_per_node": 1,
                   "intra": {"type": "pcie", "bandwidth_GBps": 20},
                   "nic": {"count": 1}, "fabric": {"type": "infiniband", "generation": "HDR"}}
        exp = {"name": "t", "simulate": {
            "workload": self.path("mlp.json"), "clusters": [cluster], "gpus": [2],
            "micro_batch": 4, "grad_acc": 1, "total_steps": 2,
            "optimizers": [{"label": "Adam", "optimizer": {"type": "Adam",
                                                          "params": {"lr": 1e-4}}}]}}
        with open(self.path("exp.json"), "w", encoding="utf-8") as f:
            json.dump(exp, f)
        out = self.path("out.json")
        sim = subprocess.run([ARGS.clbo, "simulate", self.path("exp.json"), "-o", out, "-q"],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(sim.returncode, 0, sim.stderr)
        with open(out, encoding="utf-8") as f:
            res = json.load(f)
        self.assertEqual(res["inputs"]["workload"]["params"], 64 * 10 + 192 * 64 + 192 + 4 + 1)
        self.assertEqual(res["inputs"]["workload"]["tensors"], 5)
        gpu = res["inputs"]["clusters"]["two-l40s"]["gpu_figures"]
        self.assertEqual(gpu["fp16_tflops_source"], "user: test figures")
        profile = res["runs"][0]["compute_profile"]
        self.assertTrue(profile["origin"].startswith("from FLOPs"), profile["origin"])
        # 2e9 FLOPs at half of 362 TFLOPS.
        self.assertAlmostEqual(profile["fwd_per_sample_ms"], 2e9 / (362e12 * 0.5) * 1e3)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", required=True)
    parser.add_argument("--clbo")
    ARGS, rest = parser.parse_known_args()
    ARGS.script = os.path.abspath(ARGS.script)
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()
