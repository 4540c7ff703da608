"""The agent evaluation runs of a session (D1 §8.4, §9): every case of the three layers, ``--dws-repeats`` times, by
the agent of ``--dws-agent`` (or read from ``--dws-trajectories``), computed once and shared by the EVAL and REL
gates (``ctx.memo``).

One run of a case: a pooled fake server is loaded with the case's world and faults; the fixture check runs on the
backend's own state before the agent starts (D1 §6, §8.4: every name the case needs unique is unique). A failed
check is a fixture failure, never the agent's: its audit record (the stable IDs found, the ones isolated) goes to
the report, never into the prompt; the fixture is isolated (the namesakes leave the world), checked again and the
case rerun, up to :data:`FIXTURE_ATTEMPTS` times. Then the agent plays the case (:func:`pytest_dws.launch.agent.
run_agent`) and the run becomes a :class:`~pytest_dws.inputs.evaluation.Trajectory`.
"""

from __future__ import annotations

import copy
import fnmatch
import itertools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_dws.core.errors import DwsInputError, NotApplicable
from pytest_dws.core.protocols import Access, GateContext
from pytest_dws.inputs.evaluation import AgentCase, Trajectory, load_layer, read_jsonl, write_jsonl
from pytest_dws.inputs.evaluation.cases import LAYERS
from pytest_dws.inputs.evaluation.trajectories import Call
from pytest_dws.inputs.evaluation.variants import DEFAULT_EXAMPLES, case_of, generate, load_matrix, points
from pytest_dws.observe.runtime.datasets import hypothesis_home, knob, root, seed

DEFAULT_REPEATS = 5  # D1 §9.4: the observed replay is 31 cases x 5
FIXTURE_ATTEMPTS = 3


@dataclass
class Evaluation:
    """The runs of one session: cases by id, trajectories per layer, fixture failures kept apart."""

    source: str  # "agent: CMD" or "trajectories: FILE"
    cases: dict[str, AgentCase]
    runs: dict[str, list[Trajectory]]
    repeats: int
    seed: int
    fixture_failures: list[dict[str, Any]] = field(default_factory=list)
    not_accepted: list[str] = field(default_factory=list)  # case/repeat that never got an accepted run


def given(ctx: GateContext) -> bool:
    """Whether an agent (or a file of its runs) is given: then D1 §10 is decided from agent runs."""
    s = ctx.settings
    return getattr(s, "agent", None) is not None or getattr(s, "trajectories", None) is not None


def evaluation(ctx: GateContext) -> Evaluation:
    """The session's evaluation (not applicable without ``--dws-agent`` or ``--dws-trajectories``)."""
    ctx.require(Access.AGENT)
    return ctx.memo(("eval", "runs"), lambda: _build(ctx))


def all_cases(ctx: GateContext) -> dict[str, AgentCase]:
    """Every case of the three layers: the variant layer's covering set and its drawn points from the session's
    seed (``DWS_EVAL_VARIANT_EXAMPLES`` / ``[evaluation] variant_examples`` points beyond the covering set)."""
    def build() -> dict[str, AgentCase]:
        folder, n = root(ctx), knob(ctx, "DWS_EVAL_VARIANT_EXAMPLES", "variant_examples", DEFAULT_EXAMPLES,
                                    table="evaluation")
        with hypothesis_home(ctx):
            variants = generate(seed(ctx), folder, n)
        covering = len(points(load_matrix(folder)))
        ctx.section("evaluation", {"variants": {"covering": covering, "drawn": len(variants) - covering}})
        cases = [*load_layer("observed", folder), *variants, *load_layer("holdout", folder)]
        return {c.id: c for c in cases}

    return ctx.memo(("eval", "cases"), build)


def _selected(ctx: GateContext, cases: dict[str, AgentCase]) -> list[AgentCase]:
    chosen = [c for c in cases.values() if _picked(ctx, c.id)]
    if not chosen:
        raise NotApplicable(f"no evaluation case matches --dws-subject {','.join(ctx.settings.subjects)}",
                            wants="an evaluation case matching --dws-subject")
    return chosen


def _picked(ctx: GateContext, case_id: str) -> bool:
    """Whether ``--dws-subject`` (none: every case) selects the case."""
    patterns = ctx.settings.subjects
    return not patterns or any(fnmatch.fnmatchcase(case_id, p) for p in patterns)


def _build(ctx: GateContext) -> Evaluation:
    s = ctx.settings
    cases = all_cases(ctx)
    repeats = int(getattr(s, "repeats", None) or DEFAULT_REPEATS)
    if s.trajectories is not None:
        runs = from_file(ctx)
        ev = Evaluation(f"trajectories: {s.trajectories}", cases, runs, max((t.repeat for rs in runs.values()
                                                                             for t in rs), default=1), seed(ctx))
    else:
        ev = Evaluation("agent: " + " ".join(s.agent or []), cases, {layer: [] for layer in LAYERS}, repeats,
                        seed(ctx))
        _run_agent(ctx, ev, _selected(ctx, cases))
        if s.agent_log is not None:
            write_jsonl([t for layer in LAYERS for t in ev.runs[layer]], s.agent_log)
    ctx.section("evaluation", {"source": ev.source, "repeats": ev.repeats, "seed": ev.seed})
    return ev


def from_file(ctx: GateContext) -> dict[str, list[Trajectory]]:
    """The runs of ``--dws-trajectories`` per layer, read once: the session reads them at its start, so a bad file
    is one ERROR line (exit 4) before any gate runs."""
    return ctx.memo(("eval", "file"), lambda: _from_file(ctx, all_cases(ctx), Path(str(ctx.settings.trajectories))))


def _from_file(ctx: GateContext, cases: dict[str, AgentCase], path: Path) -> dict[str, list[Trajectory]]:
    runs: dict[str, list[Trajectory]] = {layer: [] for layer in LAYERS}
    for no, t in enumerate(read_jsonl(path), 1):
        case = cases.get(t.case) or case_of(t.case, seed(ctx), root(ctx))  # a variant drawn with another seed
        if case is None:
            raise DwsInputError(path, f"record {no}: $.case", f"no evaluation case {t.case!r} (ids as in "
                                "`python -m pytest_dws eval cases`)")
        if _picked(ctx, t.case):
            cases.setdefault(case.id, case)
            runs[case.layer].append(t)
    return runs


def _run_agent(ctx: GateContext, ev: Evaluation, cases: list[AgentCase]) -> None:
    ctx.require(Access.MCP)
    runner: Any = ctx.cli()  # the launcher itself: its pooled servers, places and process groups
    jobs = [(c, r) for c in cases for r in range(1, ev.repeats + 1)]
    limit = runner.limit(runner.workers)
    done = itertools.count(1)
    announce = getattr(ctx, "announce", None)

    def work(job: tuple[AgentCase, int]) -> tuple[Trajectory | None, list[dict[str, Any]]]:
        out = play(ctx, runner, job[0], job[1], limit)
        n = next(done)
        if callable(announce) and (n % 25 == 0 or n == len(jobs)):
            announce(f"dws-contract: evaluation: {n} of {len(jobs)} agent runs")
        return out

    with ThreadPoolExecutor(max_workers=max(1, min(len(jobs), 2 * runner.workers)),
                            thread_name_prefix="dws-agent") as pool:
        results = list(pool.map(work, jobs))
    for (case, repeat), (traj, failures) in zip(jobs, results, strict=True):
        ev.fixture_failures += failures
        if traj is None:
            ev.not_accepted.append(f"{case.id}#{repeat}")
        else:
            ev.runs[case.layer].append(traj)


def check_fixture(world: Any, unique: dict[str, str]) -> list[dict[str, Any]]:
    """Every name the case needs unique names exactly its one stable ID in the backend's state (D1 §6)."""
    problems = []
    for name, cid in unique.items():
        found = sorted(g.cid for g in world.groups.values() if g.title == name)
        if found != [cid]:
            problems.append({"check": "unique name", "expected": cid, "found": found})
    return problems


def isolate(scenario: dict[str, Any], unique: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """The scenario without the namesakes of the names that must be unique, and their stable IDs (the audit)."""
    fixed = copy.deepcopy(scenario)
    groups = fixed["world"].get("groups") or []
    gone = [g["cid"] for g in groups if g.get("title") in unique and g.get("cid") != unique[g["title"]]]
    fixed["world"]["groups"] = [g for g in groups if g.get("cid") not in gone]
    return fixed, gone


def play(ctx: GateContext, runner: Any, case: AgentCase, repeat: int, limit: Any
         ) -> tuple[Trajectory | None, list[dict[str, Any]]]:
    """One accepted run of ``case`` (None after :data:`FIXTURE_ATTEMPTS` fixture failures) and the failures."""
    from pytest_dws.launch import scenario_key
    from pytest_dws.launch.agent import run_agent, split_requests

    rendered = case.render()
    unique = dict(rendered.fixture.get("unique") or {})
    scenario, failures, audit = rendered.scenario, [], []
    argv = list(ctx.settings.agent or [])
    slot = runner.servers.acquire()
    try:
        for attempt in range(1, FIXTURE_ATTEMPTS + 1):
            # validated once per session: the repeats of a case load the same world (jsonschema costs tens of ms)
            slot.server.load(runner.servers.validated(scenario, scenario_key(scenario)))
            slot.key = None  # the agent's writes change the world: no answer of this server is shared
            problems = check_fixture(slot.server.world, unique)
            if not problems:
                break
            failures.append({"case": case.id, "repeat": repeat, "attempt": attempt, "problems": problems})
            scenario, gone = isolate(scenario, unique)
            audit.append({"action": "isolated", "ids": gone, "kept": sorted(unique.values()),
                          "in_prompt": any(i in rendered.prompt for i in gone)})
        else:
            return None, failures
        slot.server.transcript.clear()
        run = run_agent(runner, argv, rendered.prompt, slot.server, seconds=float(case.budget["seconds"]),
                        calls=int(case.budget["calls"]), tmp=Path(ctx.tmp_root), limit=limit)
        split_requests(run.calls, slot.server.transcript.records)
        slot.server.transcript.clear()
    finally:
        runner.servers.release(slot)
    fields = ("argv", "exit", "stdout", "stderr", "start", "duration", "timed_out", "refused", "requests")
    calls = [Call(**{k: c[k] for k in fields if k in c}) for c in run.calls]  # type: ignore[arg-type]
    refused = any(c.refused for c in calls)
    traj = Trajectory(case=case.id, repeat=repeat, calls=calls, symbols=dict(case.symbols), prompt=rendered.prompt,
                      answer=run.answer, usage=run.usage, duration=round(run.duration, 3), exit=run.exit,
                      timed_out=run.timed_out, budget_exceeded="seconds" if run.timed_out else
                      ("calls" if refused else None),
                      fixture={"attempts": len(failures) + 1, "failures": len(failures), "audit": audit})
    return traj, failures


def judged(ctx: GateContext) -> dict[str, list[Any]]:
    """Every run judged (:func:`pytest_dws.verdict.evaluation.judge_run`), per layer, once per session."""
    from pytest_dws.inputs.profile import active_profile
    from pytest_dws.verdict.evaluation import canonical_check, judge_run

    def build() -> dict[str, list[Any]]:
        ev = evaluation(ctx)
        prof = active_profile(ctx)
        check = canonical_check(prof)
        return {layer: [judge_run(ev.cases[t.case], t, check, prof.errors) for t in ev.runs[layer]]
                for layer in LAYERS}

    return ctx.memo(("eval", "judged"), build)


def report(ctx: GateContext) -> dict[str, Any]:
    """The ``evaluation`` report section (published by EVAL-METRICS): metrics by layer and dimension against the
    thresholds, pass^k, D1 §1's replayed failures, the fixture failures and audit apart."""
    from pytest_dws.inputs.evaluation.thresholds import thresholds
    from pytest_dws.verdict import evalmetrics

    def build() -> dict[str, Any]:
        ev, runs = evaluation(ctx), judged(ctx)
        limits = thresholds((ctx.expect.section("evaluation") or {}).get("thresholds"))
        sec = evalmetrics.section(runs, limits)
        audit = [dict(a, case=t.case, repeat=t.repeat) for layer in LAYERS for t in ev.runs[layer]
                 for a in t.fixture.get("audit") or []]
        sec.update(source=ev.source, repeats=ev.repeats, seed=ev.seed, replays=evalmetrics.replays(runs["observed"]),
                   fixture={"failures": ev.fixture_failures, "not_accepted": ev.not_accepted, "audit": audit,
                            "reruns": len(ev.fixture_failures)})
        return sec

    return ctx.memo(("eval", "report"), build)
