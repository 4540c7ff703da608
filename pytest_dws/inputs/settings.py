"""Options, ini keys and adapter hooks resolved into one :class:`Settings` object.

The target is named as a whole by ONE source: the command line if any of ``--dws-source``,
``--dws-catalog`` or ``--dws-cli`` is given, else the adapter hooks, else the ini keys. Mixing sources
would judge one implementation's binary against another's catalog, so it is never done.
"""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_dws.core.errors import DwsInputError
from pytest_dws.core.identity import digest_seed
from pytest_dws.inputs.launchers import check_launcher, cli_argv, warm_start_modules
from pytest_dws.inputs.readings import parse_strict
from pytest_dws.inputs.recorded import (
    apply_draws,
    parse_shard,
    record_mode,
    replay_target,
    replay_unconsulted,
    take_back,
)

#: (option, ini key, help). Paths from the command line are relative to the working directory, paths from
#: the ini file to the ini file's directory.
OPTIONS: list[tuple[str, str, str]] = [
    ("--dws-cli", "dws_cli", "the command that launches the implementation, e.g. ./dws ({python} = this interpreter)"),
    ("--dws-source", "dws_source", "its source tree: catalog files, hints, skills, generator (never modified)"),
    ("--dws-catalog", "dws_catalog", "a single catalog file (cf layout, e81 envelope, or saved `dws schema --all`)"),
    ("--dws-generator", "dws_generator", "catalog generator, run in temporary copies of the tree (default for Go "
     "trees: `make generate-schema`)"),
    ("--dws-expect", "dws_expect", "the counts this release pins (TOML); counts never live in code"),
    ("--dws-baseline", "dws_baseline", "expected failures (TOML), each with a reason; a listed item that passes "
     "fails the run"),
    ("--dws-report", "dws_report", "write the JSON report: per gate id status, failing items, document reference, "
     "observed counts"),
    ("--dws-summary", "dws_summary", "write the closing block as Markdown (a CI step summary); `python -m pytest_dws "
     "summary REPORT.json` renders any report"),
    ("--dws-profile", "dws_profile", "contract profile TOML: commands, flags, aliases the gates exercise and the keys "
     "of the typed error on stderr (for renamed implementations)"),
    ("--dws-timeout", "dws_timeout", "seconds one invocation may take (default 30); a hung target is killed with "
     "its process group, and a target that does not answer `--help` like a dws, or times out 5 times in a row, "
     "stops the run (exit 4)"),
    ("--dws-sample", "dws_sample", "which tools get the costly calls (help, `schema <tool>`): default a sample "
     "covering every product and feature ('coverage'), 'all', or N evenly spaced"),
    ("--dws-shard", "dws_shard", "K/N: judge the K-th of N disjoint parts of every per-tool list (a CI matrix; "
     "merge the reports with `python -m pytest_dws merge`)"),
    ("--dws-variant-examples", "dws_variant_examples", "generated variant cases on top of the covering set (50)"),
    ("--dws-seed", "dws_seed", "seed of the generated dataset values (default: from the build's digest; printed "
     "in the report; replays a run)"),
    ("--dws-record", "dws_record", "record every invocation of this run into DIR (replay it with --dws-replay)"),
    ("--dws-record-mode", "dws_record_mode", "new (default): DIR must hold no recording yet; append: this run replays "
     "what DIR holds and records only the invocations it lacks (grow one build's recording by shards, families, "
     "samples; `python -m pytest_dws recording merge` joins folders)"),
    ("--dws-replay", "dws_replay", "judge a recording (--dws-record DIR) instead of a live --dws-cli, with the "
     "recorded run's options (source, expectations, baseline, generator, profile, env, sample, shard, selection) "
     "unless given again: the recording "
     "is the implementation under test; an invocation it does not hold is not applicable"),
    ("--dws-subject", "dws_subject", "only these subjects of per-subject gates: comma-separated globs, e.g. 'chat.*'"),
    ("--dws-agent", "dws_agent", "an agent command to evaluate (D1 §8.4, §9): run once per evaluation case and repeat, "
     "the task on stdin, a `dws` on its PATH that is the implementation behind a recording shim ({python} = this "
     "interpreter; docs/evaluation.md)"),
    ("--dws-repeats", "dws_repeats", "runs of each evaluation case by the agent (default 5: D1 §9.4's 31x5 observed "
     "replay); pass^k is reported over them"),
    ("--dws-trajectories", "dws_trajectories", "judge the agent runs of a JSONL file (docs/evaluation.md) with the "
     "same judge, instead of running an agent"),
    ("--dws-agent-log", "dws_agent_log", "write the agent's runs as a trajectories JSONL file (judge it again with "
     "--dws-trajectories)"),
    ("--dws-eval-html", "dws_eval_html", "write the evaluation report as one self-contained HTML page"),
    ("--dws-live-smoke", "dws_live_smoke", "opt-in: GROUP (a name or CID your own profile can read): SMK-LIVE runs D1 "
     "§7.4's read-only smoke against the real service with your own HOME, profile and environment, refuses any "
     "command the schema does not mark read-only, and reports counts and field names only (the session then "
     "runs with proxy-only isolation)"),
    ("--dws-isolation", "dws_isolation", "auto (default): run the session where only loopback exists (a network "
     "namespace) and say so when the machine cannot; namespace: require it (exit 4 without); proxy: proxy "
     "variables only"),
    ("--dws-warm-start", "dws_warm_start", "MODULE ...: a Python implementation launched as `{python} -I -S SCRIPT` "
     "starts each invocation as a fork of a launcher that imported these modules of SCRIPT's folder once (trusted "
     "code only: the import runs outside the jail, with an empty environment); the invocation is jailed and judged "
     "as a cold start is, and much cheaper"),
    ("--dws-strict", "dws_strict", "comma-separated strict readings of disputed sentences, each named in "
     "docs/contract.md R9 (default: none): scope-argument (the business call itself carries the stable ID), "
     "alias-absent (no reviewed compatibility alias in the schema), typed-refusal (an unconfirmed write is refused "
     "non-zero with a typed confirmation reason)"),
]
#: The options without a value-taking twin in OPTIONS (documented in the same table).
OTHER_OPTIONS: list[tuple[str, str, str]] = [
    ("--dws-contract", "", "run the dws contract gates"),
    ("--dws-env=KEY=VALUE", "dws_env, one per line", "extra environment variable for the implementation "
     "(repeatable; the rest of the environment is scrubbed)"),
]


def options_table() -> str:
    """The README's option table, generated from :data:`OPTIONS` (tests/test_docs.py keeps the README in step)."""
    rows = ["| option (ini key) | what it names |", "|---|---|"]
    for opt, ini, text in [OTHER_OPTIONS[0], *OPTIONS, OTHER_OPTIONS[1]]:
        key = f" (`{ini.split(',')[0]}`{ini[len(ini.split(',')[0]):]})" if ini else ""
        rows.append(f"| `{opt}`{key} | {text.replace('|', '/')} |")
    return "\n".join(rows) + "\n"
#: ``--dws-isolation``: try the loopback-only namespace and say when it is not possible / require it (exit 4
#: without) / proxy variables only (pytest_dws.launch.contain.sandbox).
ISOLATION_MODES = ("auto", "namespace", "proxy")
TARGET_KEYS = ("dws_source", "dws_catalog", "dws_cli", "dws_replay")


def addoptions(parser: pytest.Parser) -> None:
    """Register the command-line options and their ini twins."""
    group = parser.getgroup("dws", "dws contract suite (pytest-dws)")
    group.addoption("--dws-contract", action="store_true", help=OTHER_OPTIONS[0][2])
    for opt, ini, text in OPTIONS:
        group.addoption(opt, dest=ini, default=None, metavar="VALUE", help=text)
        parser.addini(ini, text, default=None)
    group.addoption(
        "--dws-env", dest="dws_env", action="append", default=None, metavar="KEY=VALUE",
        help=OTHER_OPTIONS[1][2],
    )
    parser.addini("dws_env", "extra KEY=VALUE environment lines for the implementation", type="linelist")
    # Internal: the suite's own mutation tests (docs/architecture.md, "Coverage-targeted mutant runs"); not in OPTIONS.
    group.addoption("--dws-replay-unconsulted", dest="dws_replay_unconsulted", default=None, metavar="DIR",
                    help=argparse.SUPPRESS)


@dataclass
class Settings:
    """Everything the suite was told about the target and the run."""

    source: Path | None = None
    catalog: Path | None = None
    cli: list[str] | None = None
    generator: list[str] | None = None
    expect: Path | None = None
    baseline: Path | None = None
    report: Path | None = None
    profile: Path | None = None
    timeout: float = 30.0
    sample: int | str | None = None  # None: the coverage sample; "all"; or N evenly spaced tools
    shard: tuple[int, int] | None = None  # --dws-shard K/N
    isolation: str = "auto"  # --dws-isolation, one of ISOLATION_MODES
    strict: frozenset[str] = frozenset()  # --dws-strict readings (STRICT_READINGS)
    live_smoke: str | None = None  # --dws-live-smoke GROUP: the opt-in real-service smoke (SMK-LIVE)
    subjects: tuple[str, ...] = ()  # --dws-subject globs (empty: every subject)
    variant_examples: int | None = None
    seed: int | None = None
    env: dict[str, str] = field(default_factory=dict)
    origin: str = "none"  # where the target came from: "command line", "hooks", "ini", "none"
    summary: Path | None = None  # --dws-summary FILE.md
    record: Path | None = None  # --dws-record DIR
    record_mode: str = "new"  # --dws-record-mode: new | append
    replay: Path | None = None  # --dws-replay DIR: the recording is the implementation (cli is its label)
    replay_unconsulted: Path | None = None  # --dws-replay-unconsulted DIR (internal; pytest_dws.launch.targeting)
    recorded: dict[str, Any] = field(default_factory=dict)  # the replayed run's seed, sample, shard ...
    keyword: str | None = None  # pytest's -k and -m of this run: a recording keeps them (its selection)
    markexpr: str | None = None
    from_recording: dict[str, str] = field(default_factory=dict)  # option -> what a replay took back (header)
    missing_recorded: dict[str, str] = field(default_factory=dict)  # option -> a recorded path not here
    agent: list[str] | None = None  # --dws-agent CMD (argv)
    repeats: int | None = None  # --dws-repeats
    trajectories: Path | None = None  # --dws-trajectories FILE
    agent_log: Path | None = None  # --dws-agent-log FILE
    eval_html: Path | None = None  # --dws-eval-html FILE
    warm_start: tuple[str, ...] = ()  # --dws-warm-start: the target's modules to preload (launch.contain.warm)


def resolve(config: pytest.Config) -> Settings:
    """Build the settings; a malformed value is a one-line input error naming the option."""
    cwd = Path(config.invocation_params.dir)
    inidir = Path(config.inipath).parent if config.inipath else Path(config.rootpath)

    def opt(key: str) -> str | None:
        return config.getoption(key)

    def ini(key: str) -> str | None:
        value = config.getini(key)
        return value or None

    s = Settings()
    cli_target = any(opt(k) for k in TARGET_KEYS)
    if cli_target:
        s.origin = "command line"
        s.source = _path(opt("dws_source"), cwd, "--dws-source", want_dir=True)
        s.catalog = _path(opt("dws_catalog"), cwd, "--dws-catalog", want_dir=False)
        cli_value = opt("dws_cli")
        s.cli = cli_argv(cli_value, cwd) if cli_value else None
        replay_target(s, opt("dws_replay"), cwd)
    else:
        hook = config.hook
        cli = hook.pytest_dws_cli_command(config=config)
        source = hook.pytest_dws_source_tree(config=config)
        catalog = hook.pytest_dws_catalog_path(config=config)
        if cli or source or catalog:
            s.origin = "hooks"
            s.cli = [str(a) for a in cli] if cli else None
            s.source = Path(source) if source else None
            s.catalog = Path(catalog) if catalog else None
        elif any(ini(k) for k in TARGET_KEYS):
            s.origin = "ini"
            s.source = _path(ini("dws_source"), inidir, "ini dws_source", want_dir=True)
            s.catalog = _path(ini("dws_catalog"), inidir, "ini dws_catalog", want_dir=False)
            ini_cli = ini("dws_cli")
            s.cli = cli_argv(ini_cli, inidir) if ini_cli else None
    # Expectations, baseline, profile and generator belong to the target: ini values only apply to an
    # ini-named target.
    for key in ("dws_expect", "dws_baseline", "dws_profile"):
        value, base = opt(key), cwd
        if value is None and s.origin == "ini":
            value, base = ini(key), inidir
        setattr(s, key[4:], _path(value, base, "--" + key.replace("_", "-"), want_dir=False))
    report = opt("dws_report") or ini("dws_report")
    s.report = (cwd / report) if report else None
    if s.report is not None:
        _check_writable(s.report, "--dws-report")
    summary = opt("dws_summary") or ini("dws_summary")
    s.summary = (cwd / summary) if summary else None
    if s.summary is not None:
        _check_writable(s.summary, "--dws-summary")
    gen = opt("dws_generator") or (ini("dws_generator") if s.origin == "ini" else None)
    if gen:
        s.generator = cli_argv(gen, cwd)
    elif s.source is not None:
        hooked = config.hook.pytest_dws_generator_command(config=config, tree=s.source)
        s.generator = [str(a) for a in hooked] if hooked else None
    subjects = opt("dws_subject") or ini("dws_subject")
    s.subjects = tuple(p.strip() for p in subjects.split(",") if p.strip()) if subjects else ()
    s.timeout = _number(opt("dws_timeout") or ini("dws_timeout") or "30", "--dws-timeout", float)
    s.isolation = str(opt("dws_isolation") or ini("dws_isolation") or "auto").strip().lower()
    s.live_smoke = (opt("dws_live_smoke") or ini("dws_live_smoke") or "").strip() or None
    if s.isolation not in ISOLATION_MODES:
        raise DwsInputError("--dws-isolation", "", f"expected auto, namespace or proxy, got {s.isolation!r}")
    s.strict = parse_strict(opt("dws_strict") or ini("dws_strict"))
    sample = opt("dws_sample") or ini("dws_sample")
    if sample is not None and str(sample).strip().lower() in ("all", "coverage"):
        s.sample = "all" if str(sample).strip().lower() == "all" else None  # coverage: the default, said again
    elif sample:
        s.sample = int(_number(sample, "--dws-sample", int))
    part = opt("dws_shard") or ini("dws_shard")
    if part:

        try:
            s.shard = parse_shard(str(part).strip())
        except ValueError as exc:
            raise DwsInputError("--dws-shard", "", str(exc)) from None
    for key in ("variant_examples", "seed"):
        raw = opt(f"dws_{key}") or ini(f"dws_{key}")
        if raw is not None:
            if not str(raw).isdigit():
                raise DwsInputError(f"--dws-{key.replace('_', '-')}", "", f"expected an integer >= 0, got {raw!r}")
            setattr(s, key, int(raw))
    apply_draws(s, sample_given=sample is not None)
    _evaluation(s, opt, ini, cwd)
    record = opt("dws_record") or ini("dws_record")
    if record:
        if s.replay is not None:
            raise DwsInputError("--dws-record", "", "a replay cannot be recorded again (give one of --dws-record, "
                                "--dws-replay)")
        s.record = (cwd / record).resolve()
        record_mode(s, str(opt("dws_record_mode") or ini("dws_record_mode") or "new"),
                     worker=hasattr(config, "workerinput"))
        # A recording fixes what decides its invocations (the manifest keeps them): the dataset knobs given by
        # the environment become settings, and a seed is drawn now if none was given.
        env_examples, env_seed = os.environ.get("DWS_VARIANT_EXAMPLES", ""), os.environ.get("DWS_VARIANT_SEED", "")
        if s.variant_examples is None and env_examples.isdigit():
            s.variant_examples = int(env_examples)
        if s.seed is None and env_seed.isdigit():
            s.seed = int(env_seed)
        if s.seed is None:  # the default a live run would draw (the build's digest), pinned in the manifest
            s.seed = digest_seed(s.cli or [])
    replay_unconsulted(s, opt("dws_replay_unconsulted"), cwd)
    warm = opt("dws_warm_start") or (ini("dws_warm_start") if s.origin == "ini" else None)
    if warm and s.replay is None:
        what = "--dws-warm-start" if opt("dws_warm_start") else "ini dws_warm_start"
        s.warm_start = warm_start_modules(warm, s.cli, what)
    if s.cli is not None and s.replay is None:
        check_launcher(s.cli, "--dws-cli" if s.origin == "command line" else f"{s.origin} dws_cli")
    for line in [*(opt("dws_env") or []), *(config.getini("dws_env") or [])]:
        key, sep, value = line.partition("=")
        if not sep or not key:
            raise DwsInputError("--dws-env", "", f"expected KEY=VALUE, got {line!r}")
        s.env[key] = value
    s.keyword, s.markexpr = (config.getoption("keyword", None) or None), (config.getoption("markexpr", None) or None)
    if s.replay is not None:
        given = {name for name in ("source", "catalog", "expect", "baseline", "profile", "generator")
                 if opt("dws_" + name)} | {name for name in ("keyword", "markexpr") if getattr(s, name)}
        given |= {"subjects"} if opt("dws_subject") else set()
        take_back(s, s.recorded, s.replay, given)
        # The recorded selection selects this run's gates as it did the recorded run's (pytest reads -k and -m
        # when it deselects, after configure).
        for name in ("keyword", "markexpr"):
            if name not in given and getattr(s, name):
                setattr(config.option, name, getattr(s, name))
    return s


def _evaluation(s: Settings, opt: Any, ini: Any, cwd: Path) -> None:
    """The agent evaluation's options (D1 §8.4, §9): the agent or a file of its runs, repeats, outputs."""
    agent, runs = opt("dws_agent") or ini("dws_agent"), opt("dws_trajectories") or ini("dws_trajectories")
    if agent and runs:
        raise DwsInputError("--dws-agent", "", "give an agent to run or a file of its runs (--dws-trajectories), "
                            "not both")
    if agent:
        s.agent = cli_argv(str(agent), cwd)
        check_launcher(s.agent, "--dws-agent")
    if runs:
        s.trajectories = _path(str(runs), cwd, "--dws-trajectories", want_dir=False)
    repeats = opt("dws_repeats") or ini("dws_repeats")
    if repeats is not None:
        if not str(repeats).isdigit() or int(repeats) < 1:
            raise DwsInputError("--dws-repeats", "", f"expected an integer >= 1, got {repeats!r}")
        s.repeats = int(repeats)
    for key, what in (("agent_log", "--dws-agent-log"), ("eval_html", "--dws-eval-html")):
        value = opt(f"dws_{key}") or ini(f"dws_{key}")
        if value:
            setattr(s, key, cwd / value)
            _check_writable(cwd / value, what)


def require_target(s: Settings, config: pytest.Config | None = None) -> None:
    """A contract run needs something to judge: a run whose every gate is "not applicable" would exit 0, and a
    CI job that lost its target must not go green (exit 4, one line). A file of agent runs is something to judge.

    When pytest chose its rootdir from an option's value (``--dws-agent /abs/path/agent``: it reads plugin options
    only after choosing the rootdir, so a bare existing path after an option is a test path to it) and found no ini
    file with a target there, the line says so and gives the ``--dws-X=VALUE`` spelling that avoids it."""
    if s.cli is None and s.source is None and s.catalog is None and s.trajectories is None:
        from pytest_dws.inputs.rootdir import split_value_taken_for_rootdir

        taken = split_value_taken_for_rootdir(config) if config is not None else None
        if taken is not None:
            option, value, root = taken
            raise DwsInputError(option, "", f"no implementation to judge: pytest took {value!r}, the value after "
                                f"{option}, for a test path and chose {root} as its rootdir, where no ini file "
                                f"names a target; write {option}=VALUE")
        raise DwsInputError("--dws-contract", "", "no implementation to judge: give --dws-cli CMD, --dws-source "
                            "TREE or --dws-catalog FILE (or the ini keys dws_cli / dws_source / dws_catalog)")


def _path(value: str | None, base: Path, what: str, *, want_dir: bool) -> Path | None:
    if not value:
        return None
    path = (base / value).resolve()
    if want_dir and not path.is_dir():
        raise DwsInputError(what, "", f"expected a directory, got {value!r} ({path})")
    if not want_dir and path.is_dir():
        raise DwsInputError(what, "", f"expected a file, got the directory {value!r}")
    if not path.exists():
        raise DwsInputError(what, "", f"no such file: {value!r} ({path})")
    return path


def _number(value: str, what: str, kind: type) -> float | int:
    try:
        number = kind(value)
    except ValueError:
        raise DwsInputError(what, "", f"expected a {kind.__name__}, got {value!r}") from None
    if not math.isfinite(number) or number <= 0:
        raise DwsInputError(what, "", f"expected a positive finite number, got {value!r}")
    return number


def _check_writable(path: Path, what: str) -> None:
    """A report path that cannot be written is bad input now, not a traceback after the whole run: its folder is
    made and the file opened for appending (removed again if this made it)."""
    if path.is_dir():
        raise DwsInputError(what, "", f"{str(path)!r} is a directory, not a file")
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise DwsInputError(what, "", f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    if not existed:
        path.unlink(missing_ok=True)
