"""What the binary says about itself, read once and shared by the schema/help gates (SCH-*, SCHCLI-*, ALI-*).

WIRE.md §7: on the real e81 binary `dws schema --all` costs 6 s once, a leaf `--help` or `schema <tool>` ~5 s
each, and a flag-parse error ~0.04 s. So: `schema --all` is read ONCE per session and every per-tool view is
derived from it; "this path exists" / "this parameter is a real flag" is proven with cheap parse errors
(a probe flag gives `unknown_flag` with `available_flags`); `--help` and `schema <tool>` run only in the gates
that are about help or schema output, over a bounded sample (``--dws-sample N``) plus every tool the documents
name. Every invocation is memoised by its argv, so gates that need the same run share it; batches go through
the runner's bounded pool (``run_many``) unless pytest-xdist already spreads the items over processes.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import fnmatch
import json
import re
import shlex
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fake_mcp.scenario import EMPTY_WORLD
from pytest_dws.errors import NotApplicable
from pytest_dws.plan import EXPENSIVE, clock, kind_of, plan_line

#: Batches bigger than this report progress (a line every this many finished invocations).
PROGRESS_BATCH = 64
#: A batch whose costly calls are estimated at this many seconds or more gets a plan line.
PLAN_WORTH = 10.0
#: Target CPU seconds assumed for a cheap call (probe, dry run) before one is measured (WIRE.md §7: 0.04 s).
CHEAP_GUESS = 0.05
#: A flag no implementation defines: `<path> PROBE_FLAG` must fail with reason unknown_flag at the leaf.
PROBE_FLAG = "--dws-contract-probe-flag"
#: Root execution controls and generic flags that Help shows but the Schema never lists (e81
#: TestFinalSchemaParametersMatchExecutableHelpFlags exclusions).
HELP_ONLY_FLAGS = frozenset({"client-id", "client-secret", "debug", "dry-run", "fields", "format", "jq", "mock",
                             "output", "profile", "timeout", "token", "verbose", "yes", "help"})
#: Tools the documents name (D2, GATES.md): always in the sample when the release has them.
DOC_NAMED_TOOLS = ("chat.send_personal_message", "chat.reply_personal_message", "chat.get_conversation_info",
                   "chat.shortcut_search_msg", "chat.shortcut_chat_members_list", "chat.shortcut_chat_messages",
                   "chat.update_group_name", "aitable.query_records", "calendar.get_calendar")

# Synthetic values: typed, CID-shaped where an ID is expected (>= 12 bytes, GATES.md §0), never `cid...` names.
SYN_CID = "cidSYNTHETICgate0001=="
SYN_GROUP = "合成测试群甲"
SYN_PERSON = "合成测试人甲"
SYN_USER = "user-synthetic-0001"
SYN_ODID = "dSYNTHETICodid0001"  # upstream isOpenDingTalkID: starts with d/D (else it is a userId to resolve)
SYN_VALUE = "synthetic-value"  # the generic value: nothing in the name or schema says more
SYN_TIME = "2026-01-01T00:00:00+08:00"
SYN_TIME_END = "2026-01-02T00:00:00+08:00"
#: Local input files a dry run reads before it previews (WIRE.md §8: `--file` must name an existing file):
#: file name -> content. Args carry :func:`input_file` marks; :func:`run_calls` writes the files on first use.
SYN_FILES = {"synthetic.txt": "合成测试文件\n", "synthetic-records.json": '[{"synthetic": "value"}]\n',
             "synthetic.md": "# 合成测试文件\n", "synthetic-groups.txt": "cidSYNTHETICgate0001==\n",
             "synthetic.xlsx": "synthetic\n"}
_FILE_MARK = "{dws-input:"
_MARK = re.compile(r"\{dws-input:(?P<name>[\w.-]+)(?:\|(?P<text>[A-Za-z0-9+/=]*))?\}")
_FORMATS = {"date-time": SYN_TIME, "date": "2026-01-01", "positive-integer": "1", "numeric-id": "10001",
            "json": "{}", "a1-range": "A1:B2", "file-path": "synthetic.txt", "dingtalk-media-id": "media-synthetic",
            "file-id-name-list": "file-synthetic:synthetic.txt"}


class Broken:
    """A memoised failure: every gate that needs the view fails with the same message (no re-run)."""

    def __init__(self, message: str) -> None:
        self.message = message


def cached(ctx: Any, key: tuple[Any, ...], build: Any) -> Any:
    """ctx.memo that also caches a failure (AssertionError) and re-raises it for every caller."""

    def guarded() -> Any:
        try:
            return build()
        except AssertionError as exc:
            return Broken(str(exc))

    value = ctx.memo(key, guarded)
    if isinstance(value, Broken):
        raise AssertionError(value.message)
    return value


# -- invocations ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Call:
    """One memoisable invocation: args after the global flags, whether to add them, and a scenario."""

    args: tuple[str, ...]
    globals_: bool = False
    token: str | None = None
    scenario: str | None = None  # key into worlds(); None = no backend (dead endpoints)


def under_xdist(ctx: Any) -> bool:
    """True when this contract session is itself a pytest-xdist worker (its config has ``workerinput``; the
    environment variables are not enough: a contract run started in-process by a test that runs under xdist
    inherits them)."""
    return getattr(ctx, "xdist", None) is not None


def run_calls(ctx: Any, calls: Iterable[Call]) -> dict[Call, Any]:
    """Run the calls not yet memoised as ONE batch on the runner's bounded pool (one by one under xdist, which
    already spreads items over processes); big batches report progress on stderr. Returns every result."""
    store: dict[Call, Any] = ctx.memo(("sch-bin", "calls"), dict)
    todo = list(dict.fromkeys(c for c in calls if c not in store))
    if todo:
        runner = ctx.cli()  # no binary: NotApplicable before the runner module is even imported
        from pytest_dws.target import Job

        scenarios = {name: world_scenario(ctx, name) for name in {c.scenario for c in todo} if name is not None}
        jobs = []
        for c in todo:
            args, files = materialise(c.args)
            jobs.append(Job(args, scenarios[c.scenario] if c.scenario is not None else None,
                            {"token": c.token, "globals_": c.globals_, "files": files}))
        share = _share(ctx)
        if share is not None and len(todo) > 1:  # pytest-xdist: each call made by one worker, read by all
            by_call = dict(zip(todo, jobs, strict=True))
            made = share.run(todo, lambda c: runner.run_jobs([by_call[c]], workers=1)[0],
                             timeout=runner.timeout + 30)
            store.update(made)
            return {c: store[c] for c in calls}
        workers = 1 if under_xdist(ctx) else None
        # One batch (no chunks: a chunk boundary would drain the pool); the plan line first, then a progress
        # line with an ETA every PROGRESS_BATCH finished calls.
        progress = _Progress(ctx, [kind_of(c.args) for c in todo], workers or runner.workers)
        for c, inv in zip(todo, runner.run_jobs(jobs, workers=workers, progress=progress), strict=True):
            store[c] = inv
    return {c: store[c] for c in calls}


def _share(ctx: Any) -> Any:
    """This xdist worker's share of the run's calls (pytest_dws.xshare), None outside xdist."""
    if not under_xdist(ctx):
        return None
    from pytest_dws import xshare

    def build() -> Any:
        share = xshare.active(ctx.xdist, repr(ctx.settings))
        if share is not None:
            ctx.on_close(share.finish)  # the last worker to finish removes the shared directory
        return share

    return ctx.memo(("sch-bin", "xshare"), build)


class _Progress:
    """The plan line of a batch with costly calls, and its progress with an ETA, on the real stderr (pytest
    captures sys.stderr). The estimate is, per call kind, the target CPU measured so far for a call of that
    kind (a costly kind not met yet: `schema --all`'s, read before any batch) times the calls, over the places
    that run side by side; the ETA re-estimates what is left the same way."""

    def __init__(self, ctx: Any, kinds: list[str], places: int) -> None:
        costly = sum(k in EXPENSIVE for k in kinds)
        self.start = time.monotonic()
        self.console = getattr(ctx, "console", None)
        self.tty = bool(self.console is not None and self.console.isatty())
        self.ledger, self.places = ctx.ledger, max(1, places)
        self.left = Counter(kinds)
        mean = ctx.ledger.mean_cpu(EXPENSIVE | {"schema --all"})
        estimate = self.seconds(self.left)
        # Worth a line: a batch a user waits for (seconds of costly calls, or many calls).
        self.shown = (bool(costly) and (estimate >= PLAN_WORTH or mean is None)) or len(kinds) > PROGRESS_BATCH
        if not self.shown:
            return
        counts = dict(Counter(kinds))
        line = plan_line(counts, mean_cpu=mean, places=places, estimate=estimate)
        ctx.section("plan", {"batches": [*ctx.sections.get("plan", {}).get("batches", []),
                                         {"calls": dict(sorted(counts.items())), "estimate_s": round(estimate, 1),
                                          "line": line}]})
        self.write("\n" + line + "\n")

    def seconds(self, calls: Counter[str]) -> float:
        """Wall seconds ``calls`` should take on this batch's places, from the CPU measured per kind."""
        costly = self.ledger.mean_cpu(EXPENSIVE | {"schema --all"}) or 0.0
        total = 0.0
        for kind, n in calls.items():
            mean = self.ledger.mean_cpu({kind})
            total += n * (mean if mean is not None else costly if kind in EXPENSIVE else CHEAP_GUESS)
        return total / self.places

    def __call__(self, done: int, total: int, job: Any) -> None:
        self.left[kind_of(job.args)] -= 1
        if self.shown and total > PROGRESS_BATCH and (done % PROGRESS_BATCH == 0 or done == total):
            rest = "" if done == total else f", ETA {clock(self.seconds(+self.left))}"
            text = f"dws-contract: calls {done}/{total}{rest}"
            # On a terminal one line updated in place; in a CI log one line each.
            self.write(("\r" + text + ("\n" if done == total else "")) if self.tty else text + "\n")

    def write(self, text: str) -> None:
        """To the session's console (the real stderr, past pytest's capture of fd 2), else sys.__stderr__."""
        stream = self.console or sys.__stderr__
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):
                stream.write(text)
                stream.flush()


def input_file(name: str, text: str | None = None) -> str:
    """The mark of a synthetic local input file in an argument (replaced by a relative path when the call runs):
    ``name`` is one of :data:`SYN_FILES`, or any name when ``text`` gives the content."""
    if text is None:
        return f"{_FILE_MARK}{name}}}"
    return f"{_FILE_MARK}{name}|{base64.b64encode(text.encode()).decode()}}}"


def materialise(args: tuple[str, ...]) -> tuple[tuple[str, ...], dict[str, str]]:
    """(``args`` with the input-file marks replaced by relative paths, {path: content} to write into the
    invocation's working directory). Relative, because real commands refuse input files outside the working
    directory (WIRE.md §8: `--groups-file`, `--contents-file`). Memo keys keep the marks."""
    files: dict[str, str] = {}

    def path(m: re.Match[str]) -> str:
        name, text = m.group("name"), m.group("text")
        files[name] = base64.b64decode(text).decode() if text is not None else SYN_FILES[name]
        return name

    out = tuple(_MARK.sub(path, a) if _FILE_MARK in a else a for a in args)
    return out, files


#: gate id -> planner(ctx) -> the invocations that gate will need (see :func:`prefetch`).
PLANNERS: dict[str, Any] = {}


def plans(gate_id: str) -> Any:
    """Register the call planner of a gate: a cheap function listing the invocations the gate will make."""

    def register(func: Any) -> Any:
        PLANNERS[gate_id] = func
        return func

    return register


def selected_gates(ctx: Any) -> set[str] | None:
    """Gate ids of the items this session will run (after -k/-m deselection), or None when unknown."""
    return getattr(ctx, "selected_gates", None)


def prefetch(ctx: Any) -> bool:
    """Run, as ONE batch on the bounded pool, the planned invocations of every SELECTED planner gate, the first
    time one of them runs: one big batch keeps all workers busy, and the gates then read memoised results.
    Under pytest-xdist every worker knows the same plan and the calls are shared (:mod:`pytest_dws.xshare`):
    each is made by the worker that claims it first. Not done when the selection is unknown (then each gate
    runs its own batch)."""

    def build() -> bool:
        chosen = selected_gates(ctx)
        if chosen is None:
            return False
        calls: list[Call] = []
        for gate_id in sorted(chosen & set(PLANNERS)):
            try:
                calls += PLANNERS[gate_id](ctx)
            except Exception:
                continue
        run_calls(ctx, calls)
        return True

    return bool(ctx.memo(("sch-bin", "prefetch"), build))


def target_time(ctx: Any, inv: Any) -> None:
    """Account a target process run outside the session runner (tree copies, the generator): the benchmark
    compares the suite's wall time with the sum of ALL the target's own process times."""
    ctx.ledger.record("other", inv.argv, inv.duration, inv.cpu)


def run_one(ctx: Any, call: Call) -> Any:
    """The memoised invocation of one call (TargetFailure on a hang/crash/flood)."""
    return run_calls(ctx, [call])[call].check()


def plain(*args: str) -> Call:
    """`dws <args>` exactly as given: no token, no global flags (help, schema, parse probes). A `--help` or a
    `schema` view runs against an empty fake world, as the offline runs of SCHCLI-NO-DISCOVERY do: one costly
    call (about 4 s on the real binary) then serves both its reading and the "nothing is requested" check."""
    return Call(tuple(args), scenario=None if kind_of(args) in ("probe", "run") else "empty")


def executed(*args: str, scenario: str | None = "synthetic") -> Call:
    """`dws --token t --format json <args>` against a fresh fake world (dry-runs, executions)."""
    return Call(tuple(args), globals_=True, token="t", scenario=scenario)


def soft(problems: list[str], check: Any, *args: Any, **kw: Any) -> bool:
    """Run one ``assert_*`` helper of :mod:`pytest_dws.assertions`; its failure becomes one entry of
    ``problems`` (a gate reports everything it found, not only the first). True when the check passed."""
    try:
        check(*args, **kw)
    except AssertionError as exc:
        problems.append(str(exc))
        return False
    return True


# -- schema --all -------------------------------------------------------------------------------------------
@dataclass
class BinSchema:
    """The binary's own catalog (`dws schema --all`), cf or e81 shape, with per-tool full leaves."""

    doc: dict[str, Any]
    shape: str  # "e81": products carry full leaves; "cf": products carry summaries (leaves fetched per tool)
    tools: dict[str, dict[str, Any]]
    products: list[dict[str, Any]]
    primary: dict[str, str] = field(default_factory=dict)  # primary CLI path -> canonical
    aliases: dict[str, str] = field(default_factory=dict)  # alias CLI path -> canonical

    def product_of(self, key: str) -> str:
        return self.tools[key].get("product_id") or key.split(".", 1)[0]


def bin_schema(ctx: Any) -> BinSchema:
    """`dws schema --all`, run once per session (empty HOME, no token, an empty fake world)."""

    def build() -> BinSchema:
        inv = run_one(ctx, plain("schema", "--all"))
        doc = inv.stdout_json
        if inv.exit_code != 0 or not isinstance(doc, dict) or not isinstance(doc.get("products"), list):
            raise AssertionError("`dws schema --all` did not print the catalog JSON (exit "
                                 f"{inv.exit_code})\n{inv.describe()}")
        products = [p for p in doc["products"] if isinstance(p, dict)]
        tools: dict[str, dict[str, Any]] = {}
        for p in products:
            for t in p.get("tools") or []:
                if isinstance(t, dict) and isinstance(t.get("canonical_path"), str):
                    tools[t["canonical_path"]] = t
        full = all("parameters" in t for t in tools.values())
        if not full:  # cf: --all carries summaries; the full leaves come from `schema <canonical>`
            calls = {k: plain("schema", k) for k in sorted(tools)}
            results = run_calls(ctx, calls.values())
            for k, c in calls.items():
                leaf = results[c].check().stdout_json
                if results[c].exit_code != 0 or not isinstance(leaf, dict):
                    raise AssertionError(f"`dws schema {k}` failed (exit {results[c].exit_code})\n"
                                         f"{results[c].describe()}")
                tools[k] = leaf
        view = BinSchema(doc, "e81" if full else "cf", tools, products)
        for k, t in tools.items():
            view.primary[t.get("primary_cli_path") or t.get("cli_path") or ""] = k
            for a in t.get("aliases") or []:
                view.aliases[a] = k
        ctx.observe("bin_schema_tools", len(tools))
        ctx.observe("bin_schema_products", len(products))
        return view

    return cached(ctx, ("sch-bin", "all"), build)


def bin_release(ctx: Any) -> Any:
    """The binary's catalog as a :class:`pytest_dws.catalog.Release` (the "bin" view for the DATA gates)."""
    from pytest_dws.catalog import Release

    return ctx.memo(("release", "bin"), lambda: Release.from_document(bin_schema(ctx).doc, "dws schema --all"))


class Subjects(list):  # type: ignore[type-arg]
    """The subjects a per-tool gate judges in this run, and ``universe``: every subject it has in the release
    (the baseline check knows them all; a sampled or sharded run judges only some)."""

    universe: list[str]


def subject_list(judged: list[str], universe: list[str]) -> Subjects:
    out = Subjects(judged)
    out.universe = universe
    return out


def schema_subjects(ctx: Any, predicate: Any = None, *, cheap: bool = False) -> Subjects:
    """Per-tool subjects for BIN gates, optionally filtered; [] when unavailable. ``cheap``: the gate's calls
    are parse probes and dry runs, so it judges every tool (this shard's part of them); otherwise it makes
    costly calls and judges the sample (:func:`sample`)."""
    try:
        view = bin_schema(ctx)
    except (AssertionError, NotApplicable):
        return subject_list([], [])
    universe = [k for k in sorted(view.tools) if predicate is None or predicate(view.tools[k])]
    judged = every(ctx, universe) if cheap else [k for k in sample(ctx, sorted(view.tools)) if k in set(universe)]
    return subject_list(judged, universe)


def every(ctx: Any, keys: Iterable[str]) -> list[str]:
    """All keys of a cheap check: this shard's part of them (``--dws-shard K/N``)."""
    from pytest_dws.plan import shard

    return shard(sorted(keys), ctx.settings.shard)


def sample(ctx: Any, keys: Iterable[str]) -> list[str]:
    """The keys whose costly calls (help, `schema <tool>`) run, in this shard (:mod:`pytest_dws.plan`):
    ``--dws-sample all`` every key, ``--dws-sample N`` N evenly spaced ones, by default the coverage sample of
    tool keys (constraint kinds, parameter features, aliases ...) or every key of another list (products:
    each is its own feature). The tools the documents and the profile name, and every key ``--dws-subject``
    selects, are always in."""
    from pytest_dws import plan

    keys = sorted(keys)

    return plan.shard(unsharded_sample(ctx, keys), ctx.settings.shard)


def unsharded_sample(ctx: Any, keys: Iterable[str]) -> list[str]:
    """:func:`sample` before ``--dws-shard`` keeps its part."""
    from pytest_dws import plan

    keys = sorted(keys)

    def build() -> list[str]:
        n = ctx.settings.sample
        named = set(DOC_NAMED_TOOLS) | set(schema_profile(ctx).get("named_tools", []))
        named |= {k for k in keys for p in ctx.settings.subjects
                  if fnmatch.fnmatchcase(k, p) or fnmatch.fnmatchcase("bin:" + k, p)}
        tools = bin_schema(ctx).tools
        if n == plan.ALL:
            picked = keys
        elif n:
            picked = plan.evenly(keys, int(n), named)
        elif all(k in tools for k in keys):
            picked = plan.coverage_sample({k: tools[k] for k in keys}, named)
        else:
            picked = keys
        return picked

    return list(ctx.memo(("sch-bin", "sample", tuple(keys)), build))


def in_sample(ctx: Any, key: str) -> bool:
    """Whether a tool's costly calls run (it is in the sample of all the binary's tools; a shard makes them for
    the tools that are its own)."""
    chosen = ctx.memo(("sch-bin", "sampled-set"), lambda: frozenset(unsharded_sample(ctx, bin_schema(ctx).tools)))
    return key in chosen


def observe_sample(ctx: Any) -> None:
    """Report how many tools the costly per-tool calls judge (at run time: collection-time counts are lost)."""
    view = bin_schema(ctx)
    judged = len(sample(ctx, sorted(view.tools)))
    how = {None: "coverage sample", "all": "every tool"}.get(ctx.settings.sample, f"{ctx.settings.sample} evenly")
    ctx.observe("schema_sample", {"judged": judged, "of": len(view.tools), "how": how,
                                  "shard": "/".join(map(str, ctx.settings.shard)) if ctx.settings.shard else None})


def schema_profile(ctx: Any) -> dict[str, Any]:
    """The `[schema]` table of the expectations file (names of hidden/retired commands, tree CLI ...)."""
    return ctx.expect.section("schema")


def leaf_or_skip(ctx: Any, subject: str | None) -> dict[str, Any]:
    """The full leaf of a subject; with no subject the view's own failure (or NotApplicable) propagates."""
    view = bin_schema(ctx)
    if subject is None:
        raise NotApplicable("the binary's catalog has no tool for this gate")
    return view.tools[subject]


# -- offline runs (SCH-NO-LISTTOOLS bin part, SCHCLI-NO-DISCOVERY) ---------------------------------------------
def offline_calls(ctx: Any) -> list[Call]:
    """ONE set of runs for both gates: `dws --help`, `dws schema` (root, --all, a product, a tool) and
    `dws <product> --help` over the sampled products, with an empty HOME, no token and every endpoint on the
    fake server (scenario ``empty``)."""
    view = bin_schema(ctx)
    sampled = unsharded_sample(ctx, view.tools)
    keys = sampled[:1]
    # Startup discovery is one behaviour of the binary, not of a product: the products of the sampled tools.
    products = sorted({view.product_of(k) for k in sampled})
    args = [("--help",), ("schema",), ("schema", "--all")]
    args += [("schema", view.product_of(k)) for k in keys] + [("schema", k) for k in keys]
    return [Call(a, scenario="empty") for a in args + [(p, "--help") for p in products]]


def check_offline_runs(ctx: Any, *, succeed: bool) -> None:
    """Every run of :func:`offline_calls` sent nothing to the server (and, with ``succeed``, exited 0)."""
    from pytest_dws.assertions import assert_exit_code, assert_no_requests

    prefetch(ctx)
    calls = offline_calls(ctx)
    results = run_calls(ctx, calls)
    for c in calls:
        inv = results[c].check()
        what = f"`dws {' '.join(c.args)}` (empty HOME, no token)"
        if succeed:
            assert_exit_code(inv, 0, what)
        assert_no_requests(inv, what)


# -- help ----------------------------------------------------------------------------------------------------
#: A flag line of cobra's Help. The value name may be several words: cobra takes a backticked phrase of the usage
#: as the name (cf8cf95 `--rooms room search   会议室 roomId 列表…`).
_FLAG_LINE = re.compile(r"^\s+(?:-\w, )?--(?P<name>[A-Za-z0-9][\w.-]*)(?: (?P<type>[\w\[\]]+(?: [\w\[\]]+)*?))?"
                        r"(?:\s{2,}(?P<usage>.*))?$")
_DEFAULT = re.compile(r'\(default (?:"(?P<q>[^"]*)"|(?P<v>[^)]*))\)\s*$')


@dataclass
class Flag:
    name: str
    type: str
    default: str | None
    usage: str


@dataclass
class Help:
    """Cobra help, parsed: the usage line, the listed subcommands, local and inherited flags."""

    usage: str | None
    commands: list[str]
    flags: dict[str, Flag]
    inherited: dict[str, Flag]

    def usage_is(self, path: str) -> bool:
        """The usage line starts with `dws <path>` (then a space or the end)."""
        want = f"dws {path}".strip()
        return self.usage is not None and (self.usage == want or self.usage.startswith(want + " "))


def parse_help(text: str) -> Help:
    """Sections `Usage:`, `Available Commands:`, `Flags:`, `Global Flags:` of Cobra-style help text."""
    usage: str | None = None
    commands: list[str] = []
    flags: dict[str, Flag] = {}
    inherited: dict[str, Flag] = {}
    section = ""
    for line in text.splitlines():
        if line and not line[0].isspace():
            section = line.strip().rstrip(":").lower()
            continue
        if not line.strip():
            continue
        if section == "usage" and usage is None:
            usage = line.strip()
        elif section in ("available commands", "additional commands"):
            commands.append(line.split()[0])
        elif section in ("flags", "global flags"):
            m = _FLAG_LINE.match(line)
            if m:
                text_usage = m.group("usage") or ""
                d = _DEFAULT.search(text_usage)
                default = None if d is None else (d.group("q") if d.group("q") is not None else d.group("v"))
                (flags if section == "flags" else inherited)[m.group("name")] = Flag(
                    m.group("name"), m.group("type") or "bool", default, text_usage)
    return Help(usage, commands, flags, inherited)


def help_of(ctx: Any, path: str) -> tuple[Any, Help]:
    """`dws <path> --help` (memoised): the invocation and its parsed help."""
    inv = run_one(ctx, plain(*path.split(), "--help"))
    return inv, parse_help(inv.stdout)


def help_batch(ctx: Any, paths: Iterable[str]) -> None:
    """Prefetch several helps on the bounded pool (a no-op for the ones already memoised)."""
    run_calls(ctx, [plain(*p.split(), "--help") for p in paths])


def schema_flags(help_: Help, listed: Iterable[str] = ()) -> set[str]:
    """Help-visible flags that the Schema must list: local + inherited minus the root execution controls and
    the generic `--json`/`--params` payload escape hatches. As upstream's schemaHelpVisibleFlagNames, the
    controls are dropped only where they are inherited (`Global Flags:`): a leaf's own flag of the same name
    (`+chat-messages --output`, WIRE.md §8) is an input the Schema must list. A `--json` the schema itself lists
    (``listed``) is that command's input, not the escape hatch (cf8cf95 `aitable view update filter --json`:
    the filter array)."""
    keep = set(listed)
    out = set()
    for f, inherited in [*((f, False) for f in help_.flags.values()), *((f, True) for f in help_.inherited.values())]:
        if f.name == "help" or (inherited and f.name in HELP_ONLY_FLAGS):
            continue
        if f.name in ("json", "params") and f.name not in keep and re.search(r"json|payload|参数", f.usage,
                                                                              re.IGNORECASE):
            continue
        out.add(f.name)
    return out


# -- synthetic values and argv ------------------------------------------------------------------------------
def is_file_flag(name: str, spec: dict[str, Any] | None) -> bool:
    """A flag naming a local input file (`--file`, `--file-path`, `--records-file`, format file-path)."""
    low = name.lower()
    return (spec or {}).get("format") == "file-path" or low == "file" or low.endswith(("-file", "file-path"))


def synth(name: str, spec: dict[str, Any] | None, params: dict[str, Any] | None = None) -> str:
    """A typed synthetic value for flag `name` (its schema entry `spec`; ``params`` its siblings). Typed facts
    first (example, enum, format, type); then what the parameter's own description documents (a JSON shape, the
    accepted words, the ID kind), because D2 §3 makes the description part of the contract an agent reads."""
    spec = spec or {}
    if is_file_flag(name, spec):
        return _input_for(name, spec, params or {})
    if spec.get("example") not in (None, ""):
        return str(spec["example"])
    if spec.get("enum"):
        return str(spec["enum"][0])
    if spec.get("format") in _FORMATS:
        return SYN_TIME_END if name.startswith("end") and spec["format"] == "date-time" else _FORMATS[spec["format"]]
    typ = spec.get("type", "string")
    if typ in ("integer", "number"):
        listed = _NUMBER_LIST.search(str(spec.get("description") or ""))
        return listed.group(1) if listed else "1"
    if typ == "boolean":
        return "true"
    description = str(spec.get("description") or "")
    value = synth_for_name(name)
    if value == SYN_VALUE:
        value = described_value(description) or value
    m = _SUFFIX.search(description)  # `文件名，必须以 .md 结尾`
    suffix = (m.group(1) or m.group(2)) if m is not None else ""
    if suffix and not value.endswith(suffix):
        value += suffix
    return value


def _input_for(name: str, spec: dict[str, Any], params: dict[str, Any]) -> str:
    """The input-file mark for file flag `name`: the sibling parameter's example as content when there is one
    (`--contents-file` holds what `--contents` takes), else a file whose kind the name or description names."""
    text = f"{name} {spec.get('description') or ''}".lower()
    stem = re.sub(r"-?file(-path)?$", "", name)
    sibling = params.get(stem) or {}
    if stem and sibling.get("example") not in (None, ""):
        return input_file(f"synthetic-{stem}.json", str(sibling["example"]))
    if ".md" in text or "markdown" in text:
        return input_file("synthetic.md")
    if "xlsx" in text or "excel" in text:
        return input_file("synthetic.xlsx")
    if "groups" in name:
        return input_file("synthetic-groups.txt")
    if "record" in name or "json" in text:
        return input_file("synthetic-records.json")
    return input_file("synthetic.txt")


_SUFFIX = re.compile(r"以\s*(\.[A-Za-z0-9]+)\s*结尾|ends? with\s*(?:`|\")?(\.[A-Za-z0-9]+)")
_NUMBER_LIST = re.compile(r"(?<![\w.])(\d+)(?:\s*/\s*\d+)+(?![\w.])")  # `支持 300000/3600000/…`: the accepted values
_JSON_START = re.compile(r"[\[{]")
_QUOTED_FORMAT = re.compile(r'格式[为是]?[：:]?\s*["“]([^"”]+)["”]')
_WORD_LIST = re.compile(r"(?:[:：]|可选值|可选)\s*(?P<word>[A-Za-z][\w-]*)\s*(?:[/、,，]|=)|"
                        r"(?:^|[\s(（:：])(?P<pair>[A-Za-z][\w-]*)=\S")
_ID_KINDS = (("opendingtalkid", SYN_ODID), ("openconversationid", SYN_CID), ("openconversation_id", SYN_CID),
             ("userid", SYN_USER))


def described_value(description: str) -> str | None:
    """A value the description documents, or None: the first JSON literal it shows (`格式: [{"deptId":1}]`), an
    empty JSON array/object when it says the value is JSON, the first of the words it lists (`newer=…, older=…`,
    `day/halfDay/hour`, `可选值: user, bot`), a quoted shape (`格式 "原文=>替换"`), or the synthetic
    ID of the first ID kind it names (`单聊接收者 openDingTalkId`). Used only where the flag's name
    says nothing (:func:`synth_for_name` is generic)."""
    if "json" in description.lower():
        decoder = json.JSONDecoder()
        for m in _JSON_START.finditer(description):
            try:
                value, _ = decoder.raw_decode(description, m.start())
            except ValueError:
                continue
            if value:
                return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return "[]" if ("数组" in description or "array" in description.lower()) else "{}"
    m = _QUOTED_FORMAT.search(description)  # `格式 "原文=>替换"`: the documented shape itself is a valid value
    if m is not None:
        return m.group(1)
    m = _WORD_LIST.search(description)
    if m is not None:
        return m.group("word") or m.group("pair")
    low = description.lower()
    kinds = sorted((low.find(key), value) for key, value in _ID_KINDS if key in low)
    return kinds[0][1] if kinds else None


def synth_for_name(name: str) -> str:
    """A value chosen by the flag or placeholder name: stable IDs are CID-shaped, queries are names."""
    low = name.lower().replace("_", "-")
    if "query" in low or (low.endswith("name") and "file" not in low):
        return SYN_PERSON if ("user" in low or "sender" in low or "person" in low) else SYN_GROUP
    if "dingtalk" in low or "odid" in low:
        return SYN_ODID
    if "conversation" in low or low in ("group", "groups", "chat", "cid", "chat-id", "id") or "cid" in low:
        return SYN_CID
    if "user" in low or "sender" in low:
        return SYN_USER
    if low in ("start", "from", "since") or low.startswith("start"):
        return SYN_TIME
    if low in ("end", "to", "until") or low.startswith("end"):
        return SYN_TIME_END
    if low == "time":
        return "2026-01-01 00:00:00"
    if "url" in low:
        return "http://127.0.0.1:1/synthetic"
    if "days" in low or "limit" in low or "size" in low or "count" in low:
        return "1"
    return SYN_VALUE


def placeholder_value(token: str) -> str | None:
    """A value for a whole-token `<placeholder>` that names an ID type, else None (then the flag decides)."""
    m = re.fullmatch(r"<([^<>]+)>", token.strip())
    if m is None:
        return None
    low = m.group(1).lower().replace("_", "").replace("-", "")
    if "dingtalkid" in low or low == "odid":
        return SYN_ODID
    if "conversationid" in low or low in ("cid", "opencid"):
        return SYN_CID
    if low == "userid":
        return SYN_USER
    return None


def flag_args(name: str, spec: dict[str, Any] | None, params: dict[str, Any] | None = None) -> list[str]:
    """`--name=value` (the `=` form keeps boolean flags unambiguous)."""
    return [f"--{name}={synth(name, spec, params)}"]


def required_args(leaf: dict[str, Any], *, skip: Sequence[str] = (), one_of: dict[int, str] | None = None
                  ) -> list[str]:
    """Flags an execution needs, from the schema's typed constraints: every required parameter (except
    `skip`), one member of every require_one_of group (``one_of`` picks the member per group index; else the
    first one no mutually_exclusive group rules out), then the closure of require_together and `required_when`,
    then the required positional arguments (upstream's own schema smoke, scripts/dev/schema_command_smoke.py,
    selects its inputs the same way)."""
    params = leaf.get("parameters") or {}
    cons = leaf.get("constraints") or {}
    skipped = set(skip)
    chosen: list[str] = [n for n, p in sorted(params.items()) if p.get("required") and n not in skipped]
    picks = one_of or {}
    chosen += [m for m in picks.values() if m in params and m not in chosen]
    exclusive = [set(g) for g in cons.get("mutually_exclusive") or []]

    def excluded(name: str) -> bool:
        return any(name in g and any(c in g and c != name for c in chosen) for g in exclusive)

    for i, grp in enumerate(cons.get("require_one_of") or []):
        if any(m in chosen for m in grp):
            continue
        pick = picks.get(i) or next((m for m in grp if m not in skipped and not excluded(m)), grp[0] if grp else None)
        if pick and pick not in skipped and pick in params:
            chosen.append(pick)
    changed = True
    while changed:
        changed = False
        for grp in cons.get("require_together") or []:
            if any(m in chosen for m in grp):
                for m in grp:
                    if m not in chosen and m in params and m not in skipped:
                        chosen.append(m)
                        changed = True
        for name, spec in sorted(params.items()):
            if name not in chosen and name not in skipped and required_when_holds(
                    str(spec.get("required_when") or ""), params, chosen):
                chosen.append(name)
                changed = True
    out: list[str] = []
    for n in chosen:
        out += flag_args(n, params.get(n), params)
    # Required positional arguments (`positionals`, D2 §3's typed annotations include 位置参数), in index order.
    for pos in sorted((p for p in leaf.get("positionals") or [] if p.get("required")),
                      key=lambda p: int(p.get("index") or 0)):
        out.append(synth(str(pos.get("name") or "arg"), pos, params))
    return out


_WHEN_USED = re.compile(r"(?:--)?(?P<flag>[\w.-]+) is used")
_WHEN_ANY = re.compile(r"any (?P<prefix>[\w.-]+)\* flag is provided")
_WHEN_IS = re.compile(r"(?:--)?(?P<flag>[\w.-]+) is (?P<values>.+)")
_WHEN_EQ = re.compile(r"--(?P<flag>[\w.-]+)=(?P<value>\S+)")


def required_when_holds(expr: str, params: dict[str, Any], chosen: Sequence[str]) -> bool:
    """Whether a parameter's `required_when` condition holds for the flags ``chosen`` (with their synthetic
    values). The forms e81 uses: `X is A or B`, `--X is used`, `any X* flag is provided`, `--X=A or --X=B`;
    anything else is not understood and adds nothing."""
    expr = expr.strip()
    if not expr:
        return False

    def value(flag: str) -> str | None:
        spec = params.get(flag) or {}
        if flag in chosen:
            return synth(flag, spec, params)
        if spec.get("default") not in (None, ""):
            return str(spec["default"]).lower() if spec.get("type") == "boolean" else str(spec["default"])
        return "false" if spec.get("type") == "boolean" else None

    if (m := _WHEN_USED.fullmatch(expr)) is not None:
        return m.group("flag") in chosen
    if (m := _WHEN_ANY.fullmatch(expr)) is not None:
        return any(c.startswith(m.group("prefix")) for c in chosen)
    eqs = [_WHEN_EQ.fullmatch(part.strip()) for part in expr.split(" or ")]
    if all(eqs):
        return any(value(e.group("flag")) == e.group("value") for e in eqs if e is not None)
    if (m := _WHEN_IS.fullmatch(expr)) is not None:
        return value(m.group("flag")) in [v.strip() for v in m.group("values").split(" or ")]
    return False


_PLACEHOLDER = re.compile(r"<[^<>]+>")


def example_argv(example: str, leaf: dict[str, Any]) -> list[str]:
    """An example as argv (without `dws`), `<placeholders>` replaced by typed synthetic values."""
    try:
        tokens = shlex.split(example, comments=True)  # `dws … --format json   # Grid`: a shell comment
    except ValueError as exc:
        raise AssertionError(f"example is not a valid shell command ({exc}): {example}") from None
    if tokens[:1] == ["dws"]:
        tokens = tokens[1:]
    params = leaf.get("parameters") or {}
    out: list[str] = []
    prev_flag: str | None = None
    for tok in tokens:
        if _PLACEHOLDER.search(tok):
            if tok.startswith("--") and "=" in tok:
                name = tok[2:].split("=", 1)[0]
                tok = f"--{name}={synth(name, params.get(name), params)}"
            elif prev_flag is not None:
                typed = placeholder_value(tok)  # `--ref-sender <openDingTalkId>`: the placeholder names the type
                tok = typed if typed is not None else synth(prev_flag, params.get(prev_flag), params)
            else:
                tok = _PLACEHOLDER.sub(lambda m: synth_for_name(m.group(0)[1:-1]), tok)
        elif prev_flag is not None and _LOCAL_FILE.match(tok):
            tok = _example_file(tok)
        elif prev_flag is not None and tok.startswith("@") and _LOCAL_FILE.match(tok[1:]):  # `--csv @data.csv`
            tok = "@" + _example_file(tok[1:])
        elif tok.startswith("--") and "=" in tok and _LOCAL_FILE.match(tok.split("=", 1)[1]):
            tok = f"{tok.split('=', 1)[0]}={_example_file(tok.split('=', 1)[1])}"
        out.append(tok)
        prev_flag = tok[2:] if tok.startswith("--") and "=" not in tok else None
    return out


#: A literal local file in an example (`./report.pdf`, `/path/to/audit.jsonl`, `workflow.json`, `@data.csv`).
_LOCAL_FILE = re.compile(r"^(?:\./|/)?[\w./-]*\.(?:json|jsonl|csv|pdf|xlsx|xls|md|txt|png|jpg|docx|pptx|bin|dat)$",
                         re.IGNORECASE)
_FILE_TEXT = {".json": "{}\n", ".csv": "name,value\nsynthetic,1\n", ".md": "# 合成测试文件\n", ".jsonl": ""}


def _example_file(path: str) -> str:
    """The input-file mark for a file an example names: a file of that name (and a neutral content of its kind)
    in the invocation's working directory, as real commands read input files only there (WIRE.md §8)."""
    name = path.rsplit("/", 1)[-1]
    return input_file(name, _FILE_TEXT.get("." + name.rsplit(".", 1)[-1].lower(), "synthetic\n"))


# -- fake worlds ---------------------------------------------------------------------------------------------
def worlds(ctx: Any) -> dict[str, dict[str, Any]]:
    """Scenarios for executions: `synthetic` resolves the synthetic names; `examples` also resolves every
    literal value that appears in an example (so names the reviewed examples use are unique groups/people)."""

    def build() -> dict[str, dict[str, Any]]:
        names = {SYN_GROUP}
        people = {SYN_PERSON}
        try:
            view = bin_schema(ctx)
            for leaf in view.tools.values():
                for ex in leaf.get("examples") or []:
                    for tok in example_argv(ex, leaf):
                        if tok and not tok.startswith("-") and not tok.lower().startswith("cid") \
                                and len(tok) <= 64 and _FILE_MARK not in tok:
                            names.add(tok)
                            people.add(tok)
        except (AssertionError, NotApplicable):
            pass
        return {"synthetic": _world("schema-synthetic", {SYN_GROUP}, {SYN_PERSON}),
                "examples": _world("schema-examples", names, people),
                "empty": copy.deepcopy(EMPTY_WORLD)}

    return ctx.memo(("sch-bin", "worlds"), build)


def world_scenario(ctx: Any, name: str) -> Any:
    """A world of :func:`worlds` as a ready fake_mcp Scenario (see :func:`prebuilt`). The empty one is built
    without the others: `schema --all` itself runs in it, and the others are built from its examples."""
    if name == "empty":
        return ctx.memo(("sch-bin", "world-scenario", name), lambda: prebuilt(copy.deepcopy(EMPTY_WORLD)))
    return ctx.memo(("sch-bin", "world-scenario", name), lambda: prebuilt(worlds(ctx)[name]))


def prebuilt(data: dict[str, Any]) -> Any:
    """The fake_mcp Scenario of a world this module builds itself, made without re-validating it (jsonschema)
    in every session: that costs the suite ~0.2 s of CPU next to the targets it measures, for shapes fixed
    here, whose only data-derived values (example literals) are filtered to valid natural names (not empty,
    no leading ``cid``). tests/test_runner_home_pool.py validates every such world against the scenario schema.
    The server builds the same fresh world from it as from the validated dict."""
    from fake_mcp import Scenario

    return Scenario(name=data["name"], world=data.get("world", {}), overrides=tuple(data.get("overrides", ())),
                    source="<pytest_dws schema gates>")


def _world(name: str, groups: set[str], people: set[str]) -> dict[str, Any]:
    out_groups, contacts, convs = [], [], []
    person = {"name": SYN_PERSON, "openDingtalkId": SYN_ODID, "userId": SYN_USER}
    for i, title in enumerate(sorted(groups)):
        cid = SYN_CID if title == SYN_GROUP else f"cidSYNTHETICworld{i:05d}"
        out_groups.append({"cid": cid, "title": title, "owner": SYN_USER, "members": [person], "bots": [],
                           "messages": []})
        convs.append({"openConversationId": cid, "title": title, "type": "group"})
    for i, who in enumerate(sorted(people)):
        contacts.append({"name": who, "userId": SYN_USER if who == SYN_PERSON else f"user-world-{i:05d}",
                         "openDingtalkId": SYN_ODID if who == SYN_PERSON else f"odid-world-{i:05d}"})
    return {"name": name, "world": {"groups": out_groups, "conversations": convs, "contacts": contacts},
            "overrides": []}


def is_write(leaf: dict[str, Any]) -> bool:
    return leaf.get("effect") in ("write", "destructive")


def writes_of(inv: Any) -> list[Any]:
    """Write tools/calls recorded during a run (fake_mcp's conservative rule: unknown non-read verbs count)."""
    from fake_mcp import is_write_tool

    return [r for r in inv.calls() if is_write_tool(r.tool)]
