#!/usr/bin/env python3
"""An independent NumPy implementation of Adam and of 1-bit Adam's warmup, to cross-check
`clbo replay` from outside the C++ code (see docs/replay.md).

It reads the same inputs as `clbo replay`, computes the trajectory in float64 from the mean
gradient over ranks (docs/reference/algorithms.md §3 warmup and §7 Adam), and either writes it as a
float32 (T, p, n) .npy file or compares it with clbo's output:

    clbo replay --optimizer opt.json --params0 theta0.npy --grads grads.npy --out clbo.npy
    python3 scripts/replay_reference.py --optimizer opt.json --params0 theta0.npy \\
        --grads grads.npy --compare clbo.npy

Supported: "Adam" (bias_correction, adam_w_mode, weight_decay, betas, eps) and the warmup
steps t <= freeze_step of "OneBitAdam" (no bias correction). Compressed steps depend on
the sign/scale rounding of the 1-bit allreduce and are not modelled: the comparison stops
at freeze_step. Needs only NumPy; the C++ tests never depend on it.
"""
import argparse
import json
import sys

import numpy as np


def load_block(path):
    with open(path) as f:
        block = json.load(f)
    if "optimizer" in block:
        block = block["optimizer"]
    return block["type"], block.get("params", {})


def ring_mean(g):
    """The mean over ranks of g (p, n) exactly as clbo's fp32 ring allreduce computes it:
    chunk j = [j*n//p, (j+1)*n//p) is summed in float32 in rank order j, j+1, ... (mod p),
    then multiplied by float32(1/p) (plan/plan.hpp). Elements whose mean is near
    zero (|mean| ~ eps) make Adam's first steps sensitive to the summation order, so a
    plain float64 mean would disagree there by far more than rounding."""
    p, n = g.shape
    out = np.empty(n, dtype=np.float32)
    for j in range(p):
        lo, hi = j * n // p, (j + 1) * n // p
        acc = np.array(g[j, lo:hi], dtype=np.float32)
        for k in range(1, p):
            acc = acc + g[(j + k) % p, lo:hi]
        out[lo:hi] = acc * np.float32(1.0 / p)
    return out


def reference_steps(kind, params, theta0, grads, plain_mean=False):
    """Yields the parameters after each step (float64, shape (n,))."""
    # clbo rounds each hyperparameter to float32 once (docs/optimizers.md, "Arithmetic"), so
    # 1 - beta2 is 1 - float32(0.999), not 0.001; without bias correction that shows.
    def f32(x):
        return float(np.float32(x))

    lr = f32(params.get("lr", 1e-3))
    b1, b2 = (f32(b) for b in params.get("betas", [0.9, 0.999]))
    eps = f32(params.get("eps", 1e-8))
    wd = f32(params.get("weight_decay", 0.0))
    if kind.lower() == "adam":
        bias_correction = bool(params.get("bias_correction", True))
        adam_w = bool(params.get("adam_w_mode", True))
        steps = grads.shape[0]
    elif kind.lower() == "onebitadam":
        bias_correction, adam_w = False, True
        steps = min(grads.shape[0], int(params.get("freeze_step", 100000)))
    else:
        sys.exit(f"replay_reference.py: type {kind!r} is not modelled (Adam, OneBitAdam only)")
    theta = theta0.astype(np.float64)
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    for t in range(1, steps + 1):
        g = (grads[t - 1].astype(np.float64).mean(axis=0) if plain_mean else
             ring_mean(grads[t - 1]).astype(np.float64))
        if not adam_w and wd:
            g = g + wd * theta
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mh, vh = (m / (1 - b1**t), v / (1 - b2**t)) if bias_correction else (m, v)
        u = mh / (np.sqrt(vh) + eps)
        if adam_w and wd:
            u = u + wd * theta
        theta = theta - lr * u
        yield theta


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--optimizer", required=True)
    ap.add_argument("--params0", required=True)
    ap.add_argument("--grads", required=True)
    out = ap.add_mutually_exclusive_group(required=True)
    out.add_argument("--out", help="write the reference trajectory, float32 (T, p, n)")
    out.add_argument("--compare", help="clbo replay's output to check against the reference")
    ap.add_argument("--plain-mean", action="store_true",
                    help="average gradients in float64 instead of emulating the fp32 ring")
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--atol", type=float, default=1e-6)
    a = ap.parse_args()

    kind, params = load_block(a.optimizer)
    theta0 = np.load(a.params0)
    grads = np.load(a.grads, mmap_mode="r")  # (T, p, n), read one step at a time
    T, p, n = grads.shape
    if a.out:
        res = np.lib.format.open_memmap(a.out, mode="w+", dtype="<f4", shape=(T, p, n))
        for t, theta in enumerate(reference_steps(kind, params, theta0, grads, a.plain_mean)):
            res[t] = theta.astype(np.float32)
        res.flush()
        return 0
    clbo = np.load(a.compare, mmap_mode="r")
    if clbo.shape != (T, p, n):
        sys.exit(f"{a.compare}: shape {clbo.shape} differs from the gradients' {(T, p, n)}")
    worst, checked = 0.0, 0
    for t, theta in enumerate(reference_steps(kind, params, theta0, grads, a.plain_mean)):
        got = clbo[t].astype(np.float64)
        err = np.abs(got - theta) - a.rtol * np.abs(theta)
        bad = np.argwhere(err > a.atol)
        if bad.size:
            r, i = bad[0]
            print(f"step {t + 1}: rank {r} element {i}: clbo {got[r, i]!r}, "
                  f"reference {theta[i]!r}")
            return 1
        worst = max(worst, float(np.max(np.abs(got - theta))))
        checked = t + 1
    print(f"{checked} of {T} steps agree on all {p} ranks (max |diff| {worst:.3g}, "
          f"rtol {a.rtol}, atol {a.atol})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
