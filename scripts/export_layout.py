#!/usr/bin/python3
"""Writes a PyTorch model's parameter layout as clbo's tensors JSON.

    export_layout.py MODULE:CALLABLE [--kwargs JSON] [--trainable-only] -o LAYOUT.json
        [--workload-out WORKLOAD.json --name NAME --fwd-flops-per-sample F --efficiency E
         [--seq-len N] [--source TEXT]]

MODULE:CALLABLE is a function or class, importable from the working directory or
PYTHONPATH, that returns the model: `torchvision.models:resnet50`, or `mymodel:build` for a
file mymodel.py holding `def build(): return ...`. --kwargs passes keyword arguments to it,
as a JSON object. The layout lists every parameter of `model.named_parameters()` in order
(the order the optimizer sees them; tied weights once), each with its name, shape and size:
{"tensors": [{"name": "...", "shape": [...], "size": N}, ...]}. --trainable-only keeps only
parameters with requires_grad.

--workload-out also writes a workload that uses the layout and takes its compute from the
forward FLOPs of one sample at the stated efficiency (fraction of the GPU's dense FP16
peak), so `clbo simulate` can run it on any GPU (docs/simulator.md, "Your model").

From Python, without the command line: `layout_of(model)` returns the dictionary and
`write_json(path, doc)` writes it atomically. The script itself never imports torch: any
object whose named_parameters() yields (name, tensor) with a `.shape` works.

Bad input (an unknown callable, a parameter with a zero or non-integer dimension, an
efficiency outside (0, 1], an output folder that does not exist) stops with a message
naming the field and value and exit status 2; nothing is written.
"""
import argparse
import importlib
import json
import math
import os
import sys
import tempfile

EXIT_INPUT = 2


class InputError(Exception):
    """Bad input: the field, the value as given and why."""

    def __init__(self, field, value, why):
        super().__init__(f"{field} = {value!r}: {why}")


def layout_of(model, trainable_only=False):
    """{"tensors": [...]} of the model's named_parameters(), in their order."""
    named = getattr(model, "named_parameters", None)
    if not callable(named):
        raise InputError("model", type(model).__name__,
                         "has no named_parameters() (expected a torch.nn.Module)")
    tensors = []
    for i, item in enumerate(named()):
        try:
            name, param = item
        except (TypeError, ValueError):
            raise InputError(f"named_parameters()[{i}]", repr(item)[:80],
                             "expected a (name, parameter) pair") from None
        if trainable_only and not getattr(param, "requires_grad", True):
            continue
        shape = getattr(param, "shape", None)
        if shape is None:
            raise InputError(f"parameter {name}", type(param).__name__, "has no .shape")
        dims = []
        for d in tuple(shape):
            if isinstance(d, bool) or not isinstance(d, int) or d < 1:
                raise InputError(f"parameter {name}.shape", list(tuple(shape)),
                                 "every dimension must be a positive integer")
            dims.append(int(d))
        tensors.append({"name": str(name), "shape": dims, "size": math.prod(dims)})
    if not tensors:
        raise InputError("model", type(model).__name__, "has no parameters to export")
    return {"tensors": tensors}


def workload_of(name, layout_path, workload_path, fwd_flops, efficiency, seq_len, source):
    """A workload JSON using the layout file, compute from FLOPs per sample."""
    rel = os.path.relpath(os.path.abspath(layout_path),
                          os.path.dirname(os.path.abspath(workload_path)))
    doc = {
        "name": name,
        "description": f"{name}: layout exported by scripts/export_layout.py",
        "source": source,
        "fwd_flops_per_sample": fwd_flops,
        "layout": rel,
        "compute": {"from_flops": {"efficiency": efficiency, "source": source}},
    }
    if seq_len:
        doc["seq_len"] = seq_len
    return doc


def write_json(path, doc):
    """Writes doc to path through a temporary file renamed into place."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".export_layout-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def check_output(field, path):
    """An output path must be writable before any work starts."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise InputError(field, path, "is a folder; give a file name")
    if not os.path.isdir(folder):
        raise InputError(field, path, f"folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise InputError(field, path, f"folder {folder} is not writable")


def build_model(spec, kwargs):
    """Calls MODULE:CALLABLE(**kwargs)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise InputError("MODEL", spec, "expected MODULE:CALLABLE, e.g. mymodel:build")
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise InputError("MODEL", spec, f"cannot import {module_name}: {e}") from None
    target = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise InputError("MODEL", spec, f"{module_name} has no attribute {attr}")
        target = getattr(target, part)
    if not callable(target):
        raise InputError("MODEL", spec, f"{attr} is not callable")
    try:
        return target(**kwargs)
    except TypeError as e:  # most often arguments it does not take
        raise InputError("--kwargs", json.dumps(kwargs), f"{spec} rejected them: {e}") from None


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", metavar="MODEL", help="MODULE:CALLABLE returning the model")
    p.add_argument("--kwargs", default="{}", help="keyword arguments for it, a JSON object")
    p.add_argument("-o", "--out", required=True, help="the tensors JSON to write")
    p.add_argument("--trainable-only", action="store_true",
                   help="only parameters with requires_grad")
    w = p.add_argument_group("workload (all of --workload-out, --name, --fwd-flops-per-sample "
                             "and --efficiency)")
    w.add_argument("--workload-out", help="also write a workload JSON using the layout")
    w.add_argument("--name", help="the workload's name")
    w.add_argument("--fwd-flops-per-sample", type=float,
                   help="forward FLOPs of one sample (about 2 x matmul parameters x tokens)")
    w.add_argument("--efficiency", type=float,
                   help="fraction of the dense FP16 peak forward and backward reach, (0, 1]")
    w.add_argument("--seq-len", type=int, default=0, help="tokens per sample (0: not a sequence)")
    w.add_argument("--source", default="", help="where the FLOPs and efficiency come from")
    return p.parse_args(argv)


def validate(args):
    """Every input checked before the model is built."""
    try:
        kwargs = json.loads(args.kwargs)
    except json.JSONDecodeError as e:
        raise InputError("--kwargs", args.kwargs, f"is not JSON: {e}") from None
    if not isinstance(kwargs, dict):
        raise InputError("--kwargs", args.kwargs, "expected a JSON object")
    check_output("--out", args.out)
    given = {k: getattr(args, k) for k in ("name", "fwd_flops_per_sample", "efficiency")}
    if args.workload_out is None:
        for k, v in given.items():
            if v is not None:
                raise InputError("--" + k.replace("_", "-"), v, "only used with --workload-out")
        return kwargs
    check_output("--workload-out", args.workload_out)
    for k, v in given.items():
        if v is None:
            raise InputError("--" + k.replace("_", "-"), "missing", "required by --workload-out")
    if not args.name.strip():
        raise InputError("--name", args.name, "must not be empty")
    f = args.fwd_flops_per_sample
    if not (math.isfinite(f) and 0 < f <= 1e18):
        raise InputError("--fwd-flops-per-sample", f, "must be in (0, 1e18]")
    if not (math.isfinite(args.efficiency) and 0 < args.efficiency <= 1):
        raise InputError("--efficiency", args.efficiency,
                         "must be in (0, 1]: a fraction of the dense FP16 peak")
    if not 0 <= args.seq_len <= 1 << 22:
        raise InputError("--seq-len", args.seq_len, "must be in [0, 4194304]")
    return kwargs


def main(argv=None):
    args = parse_args(argv)
    try:
        kwargs = validate(args)
        layout = layout_of(build_model(args.model, kwargs), args.trainable_only)
        docs = [(args.out, layout)]
        if args.workload_out:
            docs.append((args.workload_out,
                         workload_of(args.name, args.out, args.workload_out,
                                     args.fwd_flops_per_sample, args.efficiency, args.seq_len,
                                     args.source or "scripts/export_layout.py " + args.model)))
    except InputError as e:
        print(f"export_layout.py: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    for path, doc in docs:
        write_json(path, doc)
    n = sum(t["size"] for t in layout["tensors"])
    print(f"{args.out}: {len(layout['tensors'])} tensors, {n} parameters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
