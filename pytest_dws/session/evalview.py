"""The agent evaluation as people read it, built from the JSON report alone: lines for the terminal and the
Markdown summary, and one self-contained HTML page (``--dws-eval-html``; no script, no external resource).

What is shown follows D1: the four dimensions of §10 apart per layer, every metric against its threshold,
pass^k, the calls per §6 class, D1 §1's replayed failures, the failing trajectories with their calls, the fixture
failures and their audit apart; and §9.4's order: clean is shown only when the first four layers (typed unit
tests, fake-MCP CLI end to end, Schema/Skill policy, the observed replay) passed, else it says why it is withheld.
"""

from __future__ import annotations

import html
from typing import Any

from pytest_dws.verdict.metrics import fmt

#: D1 §9.4's layers, in order, and the gate families (or gates) of a report that decide each.
ORDER = (("typed unit tests", ("ERR",)), ("fake MCP CLI E2E", ("TGT", "ALI", "SMK", "ACC", "DS")),
         ("Schema/Skill policy", ("SCH", "SCHCLI", "FIN")), ("observed 31×5 replay", ("EVAL-OBSERVED",)),
         ("variant", ("EVAL-VARIANT",)), ("safety holdout", ("EVAL-HOLDOUT",)))
_GOOD = ("passed", "xfailed")


def order(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Each §9.4 layer with its status in this report: passed, failed, or not judged (no gate of it ran)."""
    gates = report.get("gates") or {}
    out = []
    for name, keys in ORDER:
        found = [v.get("status") for g, v in gates.items() if g in keys or g.split("-", 1)[0] in keys]
        judged = [s for s in found if s != "not_applicable"]
        status = "not judged" if not judged else "passed" if all(s in _GOOD for s in judged) else "failed"
        out.append({"layer": name, "status": status})
    return out


def clean_shown(report: dict[str, Any]) -> tuple[bool, str]:
    """D1 §9.4: clean is looked at only when the first four layers passed."""
    first = order(report)[:4]
    blocked = [f"{x['layer']} {x['status']}" for x in first if x["status"] != "passed"]
    return (not blocked, "" if not blocked else "withheld (D1 §9.4: clean only after the first four layers pass; "
            + ", ".join(blocked) + ")")


def lines(report: dict[str, Any]) -> list[str]:
    """One line per layer and dimension, the broken thresholds, the fixture line."""
    sec = report.get("evaluation") or {}
    if not sec.get("layers"):
        return []
    shown, why = clean_shown(report)
    var = sec.get("variants") or {}
    drawn = f", variants {var.get('covering')} covering + {var.get('drawn')} drawn" if var else ""
    out = [f"agent evaluation ({sec.get('source')}, {sec.get('repeats')} repeats, seed {sec.get('seed')}{drawn})"]
    for name, layer in sec["layers"].items():
        head = f"{name}: {layer['passed']} of {layer['runs']} runs met their end state ({layer['cases']} cases); " \
               f"pass^k {layer.get('pass_hat_k')}"
        out.append(head)
        for dim, ms in layer["dimensions"].items():
            if dim == "clean" and not shown:
                out.append(f"  {dim}: {why}")
                continue
            out.append(f"  {dim}: " + ", ".join(f"{k}={fmt(v)}" for k, v in ms.items()))
        out += [f"  BROKEN {b['dimension']}: {b['metric']} = {b['value']} ({'max' if 'max' in b else 'min'} "
                f"{b.get('max', b.get('min'))})" for b in layer["broken"]]
    fx = sec.get("fixture") or {}
    out.append(f"fixture: {fx.get('reruns', 0)} fixture failures isolated and rerun (not the agent's), "
               f"{len(fx.get('not_accepted') or [])} runs without an accepted fixture")
    return out


_CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d2430;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ccd}h3{font-size:15px;margin:10px 0 4px}
table{border-collapse:collapse;margin:6px 0 14px}td,th{border:1px solid #d5d9e0;padding:3px 8px;text-align:left;
vertical-align:top}th{background:#f2f4f8}.ok{color:#176d2c}.bad{color:#b3261e;font-weight:600}.na{color:#777}
.dims{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:10px}
.dim{border:1px solid #d5d9e0;border-radius:6px;padding:8px 10px;min-width:0}
.dim table{width:100%}.dim td{overflow-wrap:anywhere}.dim td.b{width:35%}
.bar{background:#eef0f4;width:100%;max-width:180px;min-width:40px;height:10px;position:relative;display:inline-block}
.bar span{background:#3a6fd8;height:10px;display:block}.bar i{position:absolute;top:-3px;width:2px;height:16px;
background:#b3261e}.bad .bar span{background:#b3261e}code{background:#f4f4f6;padding:0 3px}
.order li.passed{color:#176d2c}.order li.failed{color:#b3261e}.order li{margin:2px 0}"""


def _e(value: Any) -> str:
    return html.escape(str(value))


def _bar(metric: dict[str, Any]) -> str:
    value, bound = metric.get("value"), metric.get("threshold") or {}
    if not isinstance(value, int | float):
        return ""
    if "denominator" in metric or (isinstance(value, float) and value <= 1 and "max" not in bound):
        width, mark = max(0.0, min(1.0, float(value))), bound.get("min")
    else:  # a count: the bar fills as it grows past its maximum
        width, mark = min(1.0, float(value) / max(1.0, float(bound.get("max") or 0) + float(value) or 1.0)), None
    tick = f'<i style="left:{float(mark) * 100:.1f}%"></i>' if isinstance(mark, int | float) else ""
    return f'<span class="bar"><span style="width:{width * 100:.1f}%"></span>{tick}</span>'


def _metric_row(layer: str, name: str, metric: dict[str, Any], broken: set[str]) -> str:
    bound = metric.get("threshold") or {}
    limit = f"max {bound['max']}" if "max" in bound else f"min {bound['min']}" if "min" in bound else "—"
    cls = "bad" if name in broken else ("ok" if bound else "na")
    value = _e(metric.get("value"))
    return (f'<tr class="{cls}" data-layer="{_e(layer)}" data-metric="{_e(name)}" data-value="{value}">'
            f'<td>{_e(name)}</td><td class="v">{_e(fmt(metric))}</td><td class="b">{_bar(metric)}</td>'
            f'<td>{_e(limit)}</td></tr>')


def page(report: dict[str, Any]) -> str:
    """The evaluation report as one self-contained HTML page."""
    sec = report.get("evaluation") or {}
    shown, why = clean_shown(report)
    rel = report.get("release") or {}
    parts = [f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>dws agent evaluation</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>dws agent evaluation</h1><p>Source: <code>{_e(sec.get('source'))}</code> · repeats "
             f"{_e(sec.get('repeats'))} · seed {_e(sec.get('seed'))} · variants: "
             f"{_e((sec.get('variants') or {}).get('covering', '?'))} covering + "
             f"{_e((sec.get('variants') or {}).get('drawn', '?'))} drawn</p>"]
    if rel:
        verdict = "MET" if rel.get("verdict") == "pass" else "NOT MET"
        parts.append(f'<p id="release" class="{"ok" if verdict == "MET" else "bad"}">Release verdict (D1 §10): '
                     f"<b>{verdict}</b>, decided from {_e(rel.get('source', 'the suite'))}</p>")
    parts.append('<h2>D1 §9.4 order</h2><ol class="order">' + "".join(
        f'<li class="{_e(x["status"]).replace(" ", "-")}">{_e(x["layer"])}: {_e(x["status"])}</li>'
        for x in order(report)) + "</ol>" + ("" if shown else f"<p class=\"bad\">Clean {_e(why)}</p>"))
    for name, layer in (sec.get("layers") or {}).items():
        broken = {b["metric"] for b in layer["broken"]}
        parts.append(f'<h2 id="layer-{_e(name)}">Layer {_e(name)}</h2><p data-layer="{_e(name)}" class="summary">'
                     f'<span class="passed">{layer["passed"]}</span> of <span class="runs">{layer["runs"]}</span> runs '
                     f"met their end state ({layer['cases']} cases) · pass^k: "
                     + ", ".join(f"pass^{k} = {v:.3f}" for k, v in (layer.get("pass_hat_k") or {}).items()) + "</p>")
        parts.append('<div class="dims">')
        for dim, ms in layer["dimensions"].items():
            if dim == "clean" and not shown:
                parts.append(f'<div class="dim"><h3>{_e(dim)}</h3><p class="na">{_e(why)}</p></div>')
                continue
            rows = "".join(_metric_row(name, k, v, broken) for k, v in ms.items())
            parts.append(f'<div class="dim" data-dimension="{_e(dim)}"><h3>{_e(dim)}</h3><table><tr><th>metric</th>'
                         f"<th>value</th><th></th><th>threshold</th></tr>{rows}</table></div>")
        parts.append("</div><h3>Calls per D1 §6 class</h3><table><tr>" + "".join(
            f"<th>{_e(k)}</th>" for k in layer["classes"]) + "</tr><tr>" + "".join(
            f"<td>{_e(v)}</td>" for v in layer["classes"].values()) + "</tr></table>")
    replays = sec.get("replays") or {}
    if replays:
        parts.append("<h2>D1 §1: the 74 failed calls, replayed</h2><table><tr><th>class</th><th>failed calls</th>"
                     "<th>met in every run</th><th>cases</th></tr>" + "".join(
                         f"<tr><td>{_e(g)}</td><td>{r['replays']}</td><td>{r['met']}</td><td>{r['cases']}</td></tr>"
                         for g, r in replays.items()) + "</table>")
    failing = sec.get("failing") or []
    parts.append(f"<h2>Failing trajectories ({sec.get('failing_total', 0)})</h2>")
    for run in failing:
        calls = "".join(f"<tr><td><code>dws {_e(' '.join(c['argv']))}</code></td><td>{_e(c.get('exit_code'))}</td>"
                        f"<td>{_e(c.get('class'))}</td><td>{_e(c.get('reason') or '')}</td></tr>"
                        for c in run.get("calls") or [])
        parts.append(f"<details><summary><b>{_e(run['case'])}</b> #{run['repeat']}: {_e('; '.join(run['problems']))}"
                     f"</summary><table><tr><th>call</th><th>exit</th><th>class</th><th>reason</th></tr>{calls}"
                     "</table></details>")
    fx = sec.get("fixture") or {}
    parts.append(f"<h2>Fixture failures (apart from the agent's)</h2><p>{fx.get('reruns', 0)} fixture failures "
                 f"isolated and rerun; {len(fx.get('not_accepted') or [])} runs without an accepted fixture.</p>")
    if fx.get("audit"):
        parts.append("<table><tr><th>case</th><th>run</th><th>action</th><th>stable IDs isolated</th><th>kept</th>"
                     "</tr>" + "".join(f"<tr><td>{_e(a['case'])}</td><td>{a['repeat']}</td><td>{_e(a['action'])}"
                                       f"</td><td>{_e(', '.join(a['ids']))}</td><td>{_e(', '.join(a['kept']))}</td>"
                                       "</tr>" for a in fx["audit"][:60]) + "</table>")
    parts.append("</body></html>")
    return "\n".join(parts)
