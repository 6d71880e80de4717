#!/usr/bin/env python3
"""Time DeepSpeed's 1-bit compression dataflow on this GPU and compare it with clbo's kernels.

The reference path follows deepspeed/runtime/comm/nccl.py stage by stage (torch element-wise
ops for error feedback and sign, cupy.packbits / cupy.unpackbits for the bits, a separate
unpack) on the same buffer size as clbo's CUDA benchmarks, 300*2^20 fp32 elements. It runs
only where torch with CUDA and cupy are importable (the lent GPU node); elsewhere it says
so and exits with status 3.

Stages (one GPU, the compute of one rank; communication is timed by `clbo bench collectives`):
  compress     worker error feedback, RMS scale, sign, packbits    vs clbo BM_Compress
  server_step  unpack p=4 pieces, scale, average, error feedback,
               RMS scale, sign, packbits, on the chunk one rank of
               p=4 serves (n/4 elements)                           vs clbo BM_ServerStep
  unpack       unpackbits, to +-1, times the scale                 vs clbo BM_Unpack

Usage: reference_path.py --clbo-json kernels-cuda.json --out reference_path.json
"""
import argparse
import json
import math
import os
import sys
import time

N = 300 << 20  # elements, as clbo's BM_*/314572800
P = 4  # workers whose pieces the server step combines


def load_clbo(path):
    """{(benchmark, n): mean milliseconds} from a Google Benchmark JSON file: raw, as
    `clbo bench kernels` writes it (clbo.bench.kernels/2), or in the clbo.bench.kernels/1
    envelope of earlier versions (results/SCHEMA.md)."""
    with open(path) as f:
        data = json.load(f)
    if data.get("schema") == "clbo.bench.kernels/1":
        data = data["benchmark"]
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
    out = {}
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        parts = b["name"].split("/")
        if len(parts) < 2 or not parts[1].isdigit():
            continue
        out[(parts[0], int(parts[1]))] = b["real_time"] * scale[b.get("time_unit", "ns")]
    return out, data.get("context", {})


def time_ms(torch, fn, warmup=3, iters=10):
    """Mean milliseconds per call of fn() by CUDA events, after warmup calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / iters


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clbo-json", help="Google Benchmark JSON of bench_kernels_cuda")
    ap.add_argument("--out", required=True, help="result JSON")
    ap.add_argument("--n", type=int, default=N, help="buffer elements (default 300*2^20)")
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args()

    try:
        import cupy
        import torch
    except Exception as e:  # noqa: BLE001 - any import failure means "not on this node"
        print(f"reference_path: skipped: torch and cupy are needed ({e})", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("reference_path: skipped: torch sees no CUDA device", file=sys.stderr)
        return 3

    dev = torch.device("cuda", 0)
    n, c = args.n, args.n // P
    gen = torch.Generator(device=dev).manual_seed(0)
    x = torch.randn(n, device=dev, generator=gen)
    worker_error = torch.zeros(n, device=dev)
    server_error = torch.zeros(c, device=dev)
    pieces = cupy.asarray(torch.randint(0, 256, (P * c // 8,), dtype=torch.uint8, device=dev))
    worker_scales = torch.rand(P, device=dev) + 0.5
    packed_server = cupy.asarray(torch.randint(0, 256, (n // 8,), dtype=torch.uint8, device=dev))
    server_scale = torch.tensor(0.75, device=dev)

    def as_pm1(t):  # DeepSpeed's sign to +-1 with sign(0) -> +1
        return t.sign().add_(1).bool().float().add_(-0.5).mul_(2.0)

    def compress():
        buf = x.clone()  # the worker's momentum, consumed in place as DeepSpeed does
        buf.add_(worker_error)
        scale = torch.linalg.norm(buf) / math.sqrt(buf.numel())
        worker_error.set_(buf - scale * as_pm1(buf))
        bits = cupy.asarray(buf.sign_().add_(1).bool())
        return cupy.packbits(bits), scale

    def server_step():
        signs = torch.as_tensor(cupy.unpackbits(pieces).reshape(P, -1), device=dev)
        m = signs.float().add_(-0.5).mul_(2.0).mul_(worker_scales.mul(1.0 / P).unsqueeze(1)).sum(0)
        m.add_(server_error)
        scale = torch.norm(m) / math.sqrt(m.numel())
        server_error.set_(m - scale * as_pm1(m))
        return cupy.packbits(cupy.asarray(m.sign_().add_(1).bool())), scale

    def unpack():
        signs = torch.as_tensor(cupy.unpackbits(packed_server), device=dev)
        return signs.float().add_(-0.5).mul_(2.0).mul_(server_scale)

    # The clone in compress() is DeepSpeed's buffer copy cost only in part; time it alone and
    # subtract it, so the stage holds just the compression dataflow.
    clone_ms = time_ms(torch, lambda: x.clone(), iters=args.iters)
    stages = {
        "compress": (max(0.0, time_ms(torch, compress, iters=args.iters) - clone_ms), "BM_Compress", n),
        "server_step": (time_ms(torch, server_step, iters=args.iters), "BM_ServerStep", c),
        "unpack": (time_ms(torch, unpack, iters=args.iters), "BM_Unpack", n),
    }

    clbo, context = ({}, {})
    if args.clbo_json:
        try:
            clbo, context = load_clbo(args.clbo_json)
        except (OSError, ValueError) as e:
            print(f"reference_path: cannot read {args.clbo_json}: {e}", file=sys.stderr)
    result = {
        "schema": "clbo.reference_path/1",
        "measured": True,
        "device": torch.cuda.get_device_name(dev),
        "torch": torch.__version__,
        "cupy": cupy.__version__,
        "n": n,
        "p_server": P,
        "clbo_context": context,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "stages": {},
    }
    print(f"{'stage':12} {'elements':>11} {'reference_ms':>13} {'clbo_ms':>9} {'speedup':>8}")
    for name, (ref_ms, bench, elems) in stages.items():
        ours = clbo.get((bench, elems))
        speedup = ref_ms / ours if ours else None
        result["stages"][name] = {
            "elements": elems,
            "reference_ms": ref_ms,
            "clbo_benchmark": f"{bench}/{elems}",
            "clbo_ms": ours,
            "speedup": speedup,
        }
        print(f"{name:12} {elems:11d} {ref_ms:13.3f} {ours if ours else float('nan'):9.3f} "
              f"{speedup if speedup else float('nan'):8.2f}")
    with open(args.out + ".tmp", "w") as f:
        json.dump(result, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(args.out + ".tmp", args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
