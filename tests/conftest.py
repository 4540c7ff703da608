"""Shared fixtures of the plugin's own tests.

``upstream`` is the ONE way tests read the real upstream data (``../shared/upstream`` or $DWS_UPSTREAM_DIR; never
vendored in this repository: a test that needs it reports itself not run, with the reason, when it is absent);
``run_contract`` runs a whole contract session in-process and returns its JSON report.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
REFERENCE_CLI = ["{python}", "-I", "-S", str(REPO / "fixtures" / "reference" / "dws")]  # -S: stdlib only, faster
#: The main job's warm start of the reference (pyproject's ``dws_warm_start``; pytest_dws.launch.contain.warm): the
#: plugin's own runs of the reference start as the main job's do (tests/test_warm_start.py judges both ways).
WARM_START = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"][
    "ini_options"]["dws_warm_start"]


def tmpfs_mount(path: Path) -> bool:
    """Whether ``path`` is itself the mount point of a tmpfs (a folder inside one is not)."""
    mounts = Path("/proc/self/mounts").read_text(encoding="utf-8").splitlines()
    return any(line.split()[1:3] == [str(path), "tmpfs"] for line in mounts)


def scratch_in_memory(base: Path = Path("/dev/shm"), room: int = 2 << 30, name: str | None = None) -> Path | None:
    """Put this test run's temporary folders (pytest's, and every contract session's: tree copies, HOMEs,
    recordings) in a folder of ours on ``base`` when it is a tmpfs with ``room`` to spare and no TMPDIR is set;
    returns the folder, or None (then the system's). Called once at import, before pytest makes its base temp and
    before xdist starts its workers (they inherit TMPDIR).

    Why (issue 44): the run makes and removes some hundred thousand files. On an ext4 without a journal (this
    machine's root), every new inode is found by scanning past the inodes removed in the last seconds: the test
    command spent ~50 s of kernel time there (sys 240 s -> 190 s, wall 349 s -> 308 s measured on tmpfs). Tests
    judge no path of the temporary folder; a contributor who wants the disk sets TMPDIR."""
    if os.environ.get("TMPDIR"):
        return None
    try:
        if not tmpfs_mount(base):
            return None
        free = os.statvfs(base)
        if free.f_bavail * free.f_frsize < room:
            return None
        own = base / (name or f"pytest-dws-{os.getuid()}")
        own.mkdir(mode=0o700, exist_ok=True)
        info = own.lstat()  # never a folder (or link) someone else made there
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
            return None
    except OSError:
        return None
    os.environ["TMPDIR"] = str(own)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    return own


scratch_in_memory()


def reference_copy(dst: Path) -> Path:
    """A private copy of the embedded reference's tree at ``dst`` (a test writes its violating input into it), with
    the bytecode cache the repository conftest made, modification times kept. The copy's runs are jailed with the
    tree read-only: without the cache each of them compiled every module again (issue 44); with it, only a module
    the test edits is compiled (its time and size no longer match the cache's)."""
    return Path(shutil.copytree(REPO / "fixtures" / "reference", dst))


#: Upstream's data files (Apache-2.0), read where the workplace keeps them; nothing of upstream's is committed here.
SHARED_UPSTREAM = REPO.parent / "shared" / "upstream"


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    """An empty fake MCP server per test module (a module that needs a scenario defines its own)."""
    from fake_mcp import FakeMCPServer

    with FakeMCPServer() as srv:
        yield srv


@pytest.fixture
def client(server: Any) -> Iterator[Any]:
    """A keep-alive client of the module's fake server."""
    from fake_mcp import MCPClient

    with MCPClient(server.url) as c:
        yield c


@pytest.fixture(scope="session")
def upstream() -> Path:
    """The directory holding dws-cf8cf95/ and dws-81f67c8d/ (real upstream data files, Apache-2.0):
    $DWS_UPSTREAM_DIR, else ../shared/upstream. Absent: the test is not run, with the reason (the upstream-data
    tier); present but incomplete: a failure."""
    env = os.environ.get("DWS_UPSTREAM_DIR")
    root = Path(env) if env else SHARED_UPSTREAM
    if not root.is_dir():
        pytest.skip(f"upstream-data tier not run: {root} is absent (upstream's data files are read from "
                    "../shared/upstream or $DWS_UPSTREAM_DIR, never committed here)")
    if not (root / "dws-cf8cf95").is_dir() or not (root / "dws-81f67c8d").is_dir():
        pytest.fail(f"upstream data incomplete at {root}: it must hold dws-cf8cf95/ and dws-81f67c8d/",
                    pytrace=False)
    return root


def pytest_configure(config: pytest.Config) -> None:
    """Import once what every in-process pytester run would otherwise import again (gate modules register on
    import; hypothesis' statistics module is slow): about 5x faster self-tests. Not for a contract run: pytest
    loads this conftest (testpaths) before it knows, and a DATA run must not pay for hypothesis."""
    if not config.getoption("dws_contract", False):
        import hypothesis.statistics  # noqa: F401

        import pytest_dws.gates  # noqa: F401


#: One test that makes each artifact the xdist workers share (tests/once.py), in the order they go first: xdist's
#: load scheduling deals the first quarter of the items out one by one, so the makers alternate between two workers
#: (eval-baseline 13 s, pristine-schema 3 s, pristine-runtime 2 s; readme-main-job 8 s, pristine-default-job 8 s,
#: plan-unsharded 4 s) and each is made while the other worker makes another. In collection order the two workers
#: reached the same artifact together and one waited for the other: 26 s of a worker idle (issue 44). A prefix
#: names the first of its parametrized tests; a maker that is gone only loses the head start.
MAKERS_FIRST = (
    "tests/test_evaluation.py::test_the_baseline_agent_meets_d1_10_from_its_own_runs",
    "tests/test_default_job.py::test_no_gate_part_passes_with_zero_judged_subjects",
    "tests/test_schema_mutants.py::test_conforming_reference_passes",
    "tests/test_mutation_matrix.py::test_default_job_fails_exactly_its_gates[",
    "tests/test_mutation_matrix.py::test_mutant_fails_exactly_its_gates[conforming]",
    "tests/test_plan.py::test_xdist_workers_make_each_planned_call_once",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist, the makers of the shared artifacts first (:data:`MAKERS_FIRST`); every worker reorders alike."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    first = [next((i for i in items if i.nodeid.startswith(name)), None) for name in MAKERS_FIRST]
    head = [i for i in first if i is not None]
    items[:] = head + [i for i in items if i not in head]


class ContractRun:
    """Outcome of one in-process contract session: exit code, JSON report, captured output."""

    def __init__(self, result: pytest.RunResult, report: dict[str, Any] | None) -> None:
        self.result = result
        self.ret = int(result.ret)
        self.report = report or {}
        self.gates: dict[str, dict[str, Any]] = self.report.get("gates", {})

    def status(self, gate_id: str) -> str | None:
        return self.gates.get(gate_id, {}).get("status")

    def failing(self) -> set[str]:
        """Gate ids whose status is failed or error."""
        return {g for g, v in self.gates.items() if v["status"] in ("failed", "error")}

    def output(self) -> str:
        return self.result.stdout.str() + self.result.stderr.str()


@pytest.fixture
def run_contract(pytester: pytest.Pytester) -> Callable[..., ContractRun]:
    """``run_contract("--dws-catalog", path, ...)`` -> ContractRun (in-process, isolated rootdir)."""
    pytester.makeini("[pytest]\n")  # never pick up the repo's default target

    def run(*args: str, inprocess: bool = True, warm: bool = True) -> ContractRun:
        report = pytester.path / "dws-report.json"
        report.unlink(missing_ok=True)
        argv = ["--dws-contract", "--dws-report", str(report), "-p", "no:cacheprovider", "-q", *map(str, args)]
        if warm and reference_target(argv):
            argv.append(f"--dws-warm-start={WARM_START}")
        result = pytester.runpytest(*argv) if inprocess else pytester.runpytest_subprocess(*argv)
        data = json.loads(report.read_text(encoding="utf-8")) if report.exists() else None
        return ContractRun(result, data)

    return run


def reference_target(argv: list[str]) -> bool:
    """Whether ``argv`` (contract options) judges the embedded reference and names no warm start of its own."""
    if any(a.startswith("--dws-warm-start") for a in argv):
        return False
    values = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--dws-cli"]
    values += [a.split("=", 1)[1] for a in argv if a.startswith("--dws-cli=")]
    return any(shlex.split(v) == REFERENCE_CLI for v in values)


@pytest.fixture
def answered(run_contract: Callable[..., ContractRun], tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The contract options that answer a run of the reference (``{python} -I -S fixtures/reference/dws``) from the
    recorded conforming default job wherever its invocations reached no switch the run sets otherwise
    (tests/targeted.py; issue 44). For the tests that judge what the suite makes of a run (its verdict, release
    line, summary, baseline use), not the reference's behaviour again: what the recording lacks runs live."""
    from tests.targeted import pristine, targeted
    from tests.test_mutation_matrix import DEFAULT_JOB

    return targeted(pristine(run_contract, tmp_path_factory, "default-job", DEFAULT_JOB))


# -- the reference implementation's own tests (tests/test_reference_*.py) ----------------------------------------
@pytest.fixture(scope="module")
def refdws_server() -> Any:
    """The scripted fake MCP server of tests/refdws_harness.py, one per test module."""
    from tests.refdws_harness import serve

    with serve() as running:
        yield running


@pytest.fixture
def fake(refdws_server: Any) -> Any:
    """A clean scripted Fake on the module's server (tests/refdws_harness.py)."""
    from tests.refdws_harness import fresh

    return fresh(refdws_server)
