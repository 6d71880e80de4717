"""The papers' published numbers, for drawing beside simulated curves: read from the claim
specs of `clbo report` (experiments/paper/*.json, docs/report.md), never retyped here.

A claim gives a published point on a figure of results file F and quantity Q when it reads
Q from F itself: its selector names F's key (or is the spec's own results, `paper/<name>`,
and F was simulated from exactly that spec's `simulate` block), and either
  * `{"op": "value"}` of Q at one run: a point at that run (an "up to" value is drawn the
    same way, its label says "up to"), or
  * `{"op": "max"}` of values of Q over several runs, with `up_to`: the paper says "up to"
    without saying where; drawn as a level over the GPU counts the claim spans.
Ratios and reductions of other fields are not points of any single figure quantity.
"""
import glob
import json
import os

import common

POINT_LEGEND = "published: the paper's value (white hexagon)"
LEVEL_LEGEND = "published: the paper's 'up to', over the settings it spans (dotted)"
_HERE = os.path.dirname(os.path.abspath(__file__))


def default_specs_dir():
    """./experiments/paper in a checkout, else the source tree's, as `clbo report` does."""
    for d in (os.path.join("experiments", "paper"),
              os.path.join(_HERE, "..", "..", "experiments", "paper")):
        if os.path.isdir(d):
            return d
    return None


def load_specs(specs_dir):
    """[spec dict] of every *.json in specs_dir, in file-name order; [] without a folder.
    A spec that is not valid JSON is an error naming it (`clbo report --check-specs`
    validates the rest)."""
    if not specs_dir or not os.path.isdir(specs_dir):
        return []
    specs = []
    for path in sorted(glob.glob(os.path.join(specs_dir, "*.json"))):
        try:
            with open(path, encoding="utf-8") as f:
                spec = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise common.PlotError(f"{path}: cannot read the claim spec ({e})") from None
        if isinstance(spec, dict) and isinstance(spec.get("claims"), list):
            spec["_file"] = path
            specs.append(spec)
    return specs


def _reads(spec, selector, key, doc):
    """Whether `selector` of `spec` reads the results file `key` (doc)."""
    own = f"paper/{spec.get('name')}"
    target = selector.get("results", own)
    if target != own:
        return target == key
    # The spec's own results: F must be that simulation, not merely share its file name.
    config = doc.get("config") or {}
    return (config.get("name") == spec.get("name") and "simulate" in spec
            and config.get("simulate") == spec.get("simulate"))


def points(specs, key, doc, field):
    """Published marks for `field` of the file `key`: a list of dicts with `where` (one
    run's fields; for a level, `wheres`), `value` (the paper's number, in the field's own
    unit, i.e. divided by the claim's scale), `up_to`, `label` and `source`."""
    out = []
    for spec in specs:
        for claim in spec["claims"]:
            value = claim.get("paper_value")
            if not common.finite(value):
                continue
            metric = claim.get("metric") or {}
            scale = claim.get("scale", 1) or 1
            subs = [metric] if metric.get("op") == "value" else \
                metric.get("of", []) if metric.get("op") == "max" and claim.get("up_to") else []
            if not subs or any(s.get("op") != "value" or not isinstance(s.get("a"), dict)
                               for s in subs):
                continue
            selectors = [s["a"] for s in subs]
            if any(sel.get("field") != field or sel.get("array", "runs") != "runs"
                   or not _reads(spec, sel, key, doc) for sel in selectors):
                continue
            mark = dict(value=float(value) / scale, up_to=bool(claim.get("up_to")),
                        label=f"{claim.get('paper', 'paper')}: "
                              f"{'up to ' if claim.get('up_to') else ''}{value:g}"
                              f"{claim.get('unit', '')}",
                        source=claim.get("source", ""), id=claim.get("id", ""))
            wheres = [sel.get("where") or {} for sel in selectors]
            if len(wheres) == 1:
                mark["where"] = wheres[0]
            else:
                mark["wheres"] = wheres
            out.append(mark)
    return out


def matches(where, run):
    return all(run.get(k) == v for k, v in where.items())


def draw_on_panel(ax, marks, cluster, series_of_run, runs, style):
    """Draws the marks of one cluster's panel: a point in its series' colour where the
    claim names one run, a dotted level over the GPUs an "up to" claim spans. Returns
    whether anything was drawn. `series_of_run(run)` is the label of the run's line (or
    None when the figure does not draw it)."""
    drawn = False
    for m in marks:
        wheres = [m["where"]] if "where" in m else m["wheres"]
        chosen = [r for r in runs if r.get("cluster") == cluster
                  and any(matches(w, r) for w in wheres)]
        if not chosen:
            continue
        gpus = sorted({r["gpus"] for r in chosen})
        series = {series_of_run(r) for r in chosen} - {None}
        colour = style(sorted(series)[0])["color"] if len(series) == 1 else "#000000"
        if len(gpus) == 1:
            # A hexagon: no optimizer series uses it (common._STYLES).
            ax.plot(gpus, [m["value"]], linestyle="none", marker="h", markersize=13,
                    markerfacecolor="white", markeredgecolor=colour, markeredgewidth=1.8,
                    zorder=5, label=POINT_LEGEND)
            ax.annotate(f"published {m['label']}", xy=(gpus[0], m["value"]), xytext=(8, 0),
                        textcoords="offset points", fontsize=7, color=colour, ha="left",
                        va="center")
        else:
            ax.plot([gpus[0], gpus[-1]], [m["value"]] * 2, linestyle=(0, (1, 1.5)),
                    color=colour, linewidth=2.0, zorder=4, label=LEVEL_LEGEND)
            ax.annotate(f"published {m['label']}", xy=(gpus[0], m["value"]), xytext=(0, 3),
                        textcoords="offset points", fontsize=7, color=colour, ha="left",
                        va="bottom")
        drawn = True
    return drawn
