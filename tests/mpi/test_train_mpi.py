#!/usr/bin/python3
"""`clbo train --backend mpi` (one worker per MPI rank) ends with the same parameters as the
local backend, bit for bit, for all six optimizers, with the same losses and the same bytes
per phase, and reports per-phase times. Skips (exit 77) without the Fashion-MNIST package.

    test_train_mpi.py CLBO MPIRUN
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from clbo_script import fail, scratch  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist"


def main():
    clbo, mpirun = sys.argv[1], sys.argv[2]
    if not os.path.isdir(DATA):
        print("SKIP: Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")
        sys.exit(77)
    work = scratch(prefix="clbo-train-mpi-")
    runs = [
        {"label": "Adam", "optimizer": {"type": "Adam", "params": {"lr": 1e-3}}},
        {"label": "LAMB", "optimizer": {"type": "Lamb", "params": {"lr": 1e-2}}},
        {"label": "1-bit Adam", "optimizer": {"type": "OneBitAdam",
                                              "params": {"lr": 1e-3, "freeze_step": 3}}},
        {"label": "1-bit Adam, masked", "exp_avg_mask": "zero_variance",
         "optimizer": {"type": "OneBitAdam", "params": {"lr": 1e-3, "freeze_step": 3}}},
        {"label": "1-bit LAMB", "optimizer": {"type": "OneBitLamb",
                                              "params": {"lr": 1e-2, "freeze_step": 3}}},
        {"label": "0/1 Adam", "optimizer": {"type": "ZeroOneAdam",
                                            "params": {"lr": 1e-3, "var_freeze_step": 3,
                                                       "var_update_scaler": 1,
                                                       "local_step_scaler": 1,
                                                       "local_step_clipper": 2}}},
        {"label": "SLAMB", "optimizer": {"type": "Slamb", "params": {"lr": 1e-2,
                                                                      "local_steps": 3}}},
    ]
    # random_shift: each example's shift is keyed by its position in the global batch, so a
    # rank that computes only its own worker must draw the same shifts as the local backend.
    exp = {"description": "test_train_mpi", "model": "mlp_small", "batch_size": 256,
           "workers": 4, "micro_batch": 32, "steps": 8, "eval_every": 4, "seeds": [3],
           "random_shift": 1, "runs": runs}
    path = os.path.join(work, "exp.json")
    json.dump(exp, open(path, "w"))
    local, mpi = os.path.join(work, "local.json"), os.path.join(work, "mpi.json")
    r = subprocess.run([clbo, "train", path, "-o", local, "-q"], capture_output=True, text=True)
    if r.returncode:
        fail("local run: %s" % r.stderr)
    env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
    r = subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "4",
                        "--mca", "btl", "tcp,self", clbo, "train", "--backend", "mpi", path, "-o",
                        mpi, "-q", "--threads", "1"], capture_output=True, text=True, env=env,
                       timeout=600)
    if r.returncode:
        fail("mpi run (exit %d): %s%s" % (r.returncode, r.stdout, r.stderr))
    a, b = json.load(open(local)), json.load(open(mpi))
    if a["resolved"]["backend"] != "local" or b["resolved"]["backend"] != "mpi":
        fail("backends recorded as %s / %s" % (a["resolved"]["backend"], b["resolved"]["backend"]))
    if len(a["runs"]) != len(runs) or len(b["runs"]) != len(runs):
        fail("expected %d runs, got %d local and %d mpi" % (len(runs), len(a["runs"]),
                                                           len(b["runs"])))
    for ra, rb in zip(a["runs"], b["runs"]):
        name = ra["label"]
        if ra["final_params_fnv1a64"] != rb["final_params_fnv1a64"]:
            fail("%s: final parameters differ: local %s, mpi %s" %
                 (name, ra["final_params_fnv1a64"], rb["final_params_fnv1a64"]))
        if len(set(ra["final_params_fnv1a64"])) != 1 and ra["optimizer_type"] not in ("Slamb", "ZeroOneAdam"):
            fail("%s: workers should end identical: %s" % (name, ra["final_params_fnv1a64"]))
        # eval and final_train_set_*: the kept parameters (the rank mean where ranks drift)
        # gathered to the root; largest_updates and exp_avg_mask: the watch around the switch,
        # which sees every worker's gradient.
        for key in ("train_loss", "phase", "eval", "comm", "final_params", "final_train_set_loss",
                    "final_train_set_accuracy", "largest_updates", "exp_avg_mask"):
            if ra.get(key) != rb.get(key):
                fail("%s: %s differs between the backends" % (name, key))
        phases = rb["timing"]["phases"]
        for ph, t in phases.items():
            for k in ("step_s_mean", "gradient_s_mean", "optimizer_s_mean", "comm_s_mean",
                      "compression_kernels_s_mean"):
                if not t[k] >= 0:
                    fail("%s phase %s: %s = %r" % (name, ph, k, t[k]))
            if t["comm_s_mean"] > t["optimizer_s_mean"] + 1e-6:
                fail("%s phase %s: communication exceeds the optimizer step" % (name, ph))
        # Every worker's own parts, per step, on the mpi backend only (local workers share one
        # process's times); each within the slowest worker's row of the same step.
        if "workers" in ra["timing"]["steps"]:
            fail("%s: the local backend reports per-worker times it does not have" % name)
        per = rb["timing"]["steps"]["workers"]
        cols = per["columns"]
        if len(per["rows"]) != len(rb["timing"]["steps"]["rows"]):
            fail("%s: %d steps of per-worker times for %d steps" %
                 (name, len(per["rows"]), len(rb["timing"]["steps"]["rows"])))
        slow_cols = rb["timing"]["steps"]["columns"]
        for t, (step, slowest) in enumerate(zip(per["rows"], rb["timing"]["steps"]["rows"])):
            if len(step) != 4 or any(len(w) != len(cols) for w in step):
                fail("%s step %d: per-worker rows %r" % (name, t + 1, step))
            for c, col in enumerate(slow_cols):
                top = max(w[cols.index(col)] for w in step)
                if top != slowest[c]:
                    fail("%s step %d: %s: slowest worker %r, per-worker max %r" %
                         (name, t + 1, col, slowest[c], top))
            for w in step:
                g, gc = w[cols.index("gradient_s")], w[cols.index("gradient_compute_s")]
                if not 0 <= gc <= g:
                    fail("%s step %d: gradient compute %r outside 0..gradient %r" % (name, t + 1, gc, g))
        if ra["optimizer_type"] == "OneBitAdam" and not phases["compression"]["compression_kernels_s_mean"] > 0:
            fail("1-bit Adam's compression steps report no compression-kernel time")
    print("ok: 7 runs, 4 workers: mpi and local end bit-identical (%s ...)" %
          b["runs"][0]["final_params_fnv1a64"][0])


if __name__ == "__main__":
    main()
