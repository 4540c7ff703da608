"""Warm starts (``--dws-warm-start``, pytest_dws.launch.contain.warm; issue 44): an invocation of a trusted Python
implementation is a fork of a spawner that imported its modules once, instead of a new interpreter. What a gate
judges must not change: these tests run the same invocations both ways and require the same process as the
interpreter gives (arguments, environment, streams, signals, exit codes), the same verdicts of the README's main job
item by item, the same recording (what each invocation printed, sent and reported consulting), and every start
that cannot be the same (another script, a changed locale) started cold. tests/test_targeted_replay.py's drawn
comparison judges its fully live runs cold and its targeted runs warm."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_dws.launch import Runner
from pytest_dws.launch.contain.containment import probe
from pytest_dws.launch.contain.warm import WarmStart
from pytest_dws.launch.targeting import CONSULTED_ENV
from tests.conftest import REPO, WARM_START
from tests.targeted import verdicts

PROBE = '''
import json, os, signal, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import probe_mod

mode = sys.argv[1]
if mode == "facts":
    streams = {n: [s.encoding, s.errors, s.line_buffering, s.isatty(), s.fileno(), s.mode]
               for n, s in (("stdin", sys.stdin), ("stdout", sys.stdout), ("stderr", sys.stderr))}
    status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
    import resource
    print(json.dumps({
        "argv": sys.argv, "executable": sys.executable, "flags": list(sys.flags), "path": sys.path,
        "name": __name__, "file": __file__, "cwd_is_home": os.getcwd() == os.environ.get("HOME"),
        "env": sorted((k, "<its runner's>" if "proxy" in k.lower() else v) for k, v in os.environ.items()
                      if k not in ("HOME", "DWS_CONTRACT_INVOCATION") and not v.startswith(os.environ["HOME"])),
        "streams": streams, "std_same": [sys.stdout is sys.__stdout__, sys.stdin is sys.__stdin__],
        "signals": {s: str(signal.getsignal(getattr(signal, s))) for s in ("SIGINT", "SIGPIPE", "SIGXFSZ", "SIGTERM")},
        "mask": sorted(map(int, signal.pthread_sigmask(signal.SIG_BLOCK, []))),
        "caps": [status["CapEff"].strip(), status["CapPrm"].strip()], "uid": os.getuid(),
        "limits": [resource.getrlimit(r) for r in (resource.RLIMIT_CPU, resource.RLIMIT_FSIZE, resource.RLIMIT_NOFILE)],
        "encodings": [sys.getfilesystemencoding(), sys.getdefaultencoding(), __import__("locale").getencoding()],
        "imported_env": probe_mod.SEEN, "tz": __import__("time").tzname,
        "main_module": sys.modules["__main__"].__file__,
    }))
elif mode == "exit-int":
    sys.exit(3)
elif mode == "exit-str":
    sys.exit("refused")
elif mode == "exit-none":
    print("out", end="")
    sys.exit()
elif mode == "raise":
    raise ValueError("x")
elif mode == "stdin":
    print(sys.stdin.read().upper(), end="")
elif mode == "atexit":
    import atexit
    atexit.register(lambda: print("bye"))
    print("hi", end="|")
elif mode == "signal":
    os.kill(os.getpid(), signal.SIGTERM)
elif mode == "interrupt":
    raise KeyboardInterrupt
elif mode == "unicode":
    print("群聊 ✓", file=sys.stderr)
    print("中文")
'''


@pytest.fixture(scope="module")
def probe_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A script and the module it imports (the module reads its environment at import: warm, it sees none)."""
    folder = tmp_path_factory.mktemp("warm-probe")
    (folder / "probe_mod.py").write_text("import os\nSEEN = sorted(os.environ)\n", encoding="utf-8")
    script = folder / "probe.py"
    script.write_text(PROBE, encoding="utf-8")
    return script


@pytest.fixture(scope="module")
def runners(probe_script: Path) -> Iterator[tuple[Runner, Runner]]:
    """(cold, warm) runners of the probe script: the same launcher, the warm one with its modules preloaded."""
    prefix = [sys.executable, "-I", "-S", str(probe_script)]
    cold, warm = Runner(prefix), Runner(prefix)
    warm.live.spawner.warm = WarmStart.of(warm.prefix, ["probe_mod"])
    yield cold, warm
    cold.close()
    warm.close()


MODES = ["facts", "exit-int", "exit-str", "exit-none", "raise", "stdin", "atexit", "signal", "interrupt", "unicode"]


@pytest.mark.parametrize("mode", MODES)
def test_a_warm_start_is_the_process_a_cold_start_is(runners: tuple[Runner, Runner], mode: str) -> None:
    """The interpreter's set-up and end, both ways: what the script sees of itself (arguments, executable, flags,
    path, environment, streams and their encoding, signal dispositions, capabilities, limits), its exit code for
    every way a script ends, what it prints, and the signal it dies of."""
    if not probe()[0]:
        pytest.skip(f"warm starts are the spawner's, which starts jailed targets only: {probe()[1]}")
    cold, warm = runners
    stdin = b"read me\n" if mode == "stdin" else b""
    a = cold.run(mode, token=None, globals_=False, check=False, stdin=stdin)
    b = warm.run(mode, token=None, globals_=False, check=False, stdin=stdin)
    assert (a.warm, b.warm) == (False, True)
    if mode == "raise" or mode == "interrupt":  # the traceback: the same last line (the script's frame and error)
        assert b.stderr.strip().splitlines()[-1] == a.stderr.strip().splitlines()[-1]
        a.stderr = b.stderr = ""
    if mode == "facts":
        facts, theirs = json.loads(b.stdout), json.loads(a.stdout)
        assert facts.pop("imported_env") == [] and theirs.pop("imported_env"), facts  # (warm: imported unset)
        assert facts["std_same"] == [True, True] and facts["env"] and facts["argv"][1:] == ["facts"], facts
        a.stdout, b.stdout = json.dumps(theirs), json.dumps(facts)
    assert (b.exit_code, b.signal, b.stdout, b.stderr) == (a.exit_code, a.signal, a.stdout, a.stderr)


def test_what_starts_cold(runners: tuple[Runner, Runner], probe_script: Path) -> None:
    """Only the launch a warm start stands for: another script, another interpreter word or another locale start
    cold (:meth:`WarmStart.applies`)."""
    warm = WarmStart.of([sys.executable, "-I", "-S", str(probe_script)], ["probe_mod"])
    assert warm is not None
    env = {"LANG": "C.UTF-8", "PATH": "/usr/bin"}
    argv = [sys.executable, "-I", "-S", str(probe_script), "facts"]
    assert warm.applies(argv, env)
    assert not warm.applies([sys.executable, "-I", "-S", str(probe_script.with_name("other.py"))], env)
    assert not warm.applies(["python3", "-I", "-S", str(probe_script)], env)
    assert not warm.applies([sys.executable, "-I", str(probe_script)], env)
    assert warm.applies(argv, {**env, CONSULTED_ENV: "/tmp/x"})  # a recording's: its modules read it at run time
    assert not warm.applies(argv, {**env, "LC_ALL": "C"})
    assert not warm.applies(argv, {**env, "LANG": "en_US.UTF-8"})
    assert WarmStart.of([sys.executable, str(probe_script)], ["probe_mod"]) is None


def test_a_failed_preload_starts_every_invocation_cold_and_says_why(tmp_path: Path) -> None:
    if not probe()[0]:
        pytest.skip(f"warm starts are the spawner's, which starts jailed targets only: {probe()[1]}")
    script = tmp_path / "dws.py"
    script.write_text("print('cold')\n", encoding="utf-8")
    runner = Runner([sys.executable, "-I", "-S", str(script)])
    runner.live.spawner.warm = WarmStart.of(runner.prefix, ["no_such_module"])
    try:
        inv = runner.run(token=None, globals_=False, check=False)
    finally:
        runner.close()
    assert (inv.exit_code, inv.stdout, inv.warm) == (0, "cold\n", False)
    assert "ModuleNotFoundError" in runner.live.spawner.cold_because


def test_the_preloaded_modules_read_no_environment_at_import() -> None:
    """The reference's warm modules (pyproject's dws_warm_start) are imported once, with an empty environment: a
    variable one of them read at import would be the spawner's for every invocation (the coverage channel too: a
    recording's invocations start warm, and what they report decides what later runs are answered)."""
    code = ("import os, sys\nread = set()\nclass Spy(dict):\n"
            "    def __getitem__(self, k): read.add(k); return dict.__getitem__(self, k)\n"
            "    def get(self, k, d=None): read.add(k); return dict.get(self, k, d)\n"
            "    def __contains__(self, k): read.add(k); return dict.__contains__(self, k)\n"
            "os.environ = Spy(os.environ)\n"
            f"sys.path.insert(0, {str(REPO / 'fixtures' / 'reference')!r})\n"
            f"for m in {WARM_START.split()!r}: __import__(m)\n"
            "print(sorted(read))\n")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.replace("'", '"')) == [], out.stdout


@pytest.mark.slow
def test_the_main_job_started_warm_is_the_main_job_started_cold(tmp_path_factory: pytest.TempPathFactory,
                                                               tmp_path: Path) -> None:
    """The README's main job as a user runs it (pyproject's dws_warm_start; recorded once by
    tests/test_default_job.py) against the same job named on the command line, where the ini's warm start does not
    apply, recorded too: the same exit, the same status, failing items and outcomes of every gate item by item, the
    same observed facts, and the same recording: every invocation's exit, output, backend transcript, egress and the
    switch points it reported consulting (which decide what later runs are answered)."""
    from pytest_dws.launch.recording import Recording
    from tests.test_default_job import readme_main_job
    from tests.test_mutation_matrix import DEFAULT_JOB

    warm_dir = readme_main_job(tmp_path_factory)
    warm: dict[str, Any] = json.loads((warm_dir / "report.json").read_text(encoding="utf-8"))
    argv = [sys.executable, "-m", "pytest", "--dws-contract", "-p", "no:cacheprovider", "-q", *DEFAULT_JOB,
            f"--dws-record={tmp_path / 'rec'}", f"--dws-report={tmp_path / 'report.json'}"]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False, timeout=1800)
    cold: dict[str, Any] = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert proc.returncode == int((warm_dir / "ret").read_text(encoding="utf-8")), proc.stdout[-3000:]
    assert cold["invocations"]["total"]["warm"] == 0
    assert warm["invocations"]["total"]["warm"] >= 0.9 * warm["invocations"]["total"]["count"], warm["invocations"]
    assert verdicts(_Run(warm)) == verdicts(_Run(cold))
    assert warm["observed"] == cold["observed"]
    recorded = Recording.load(warm_dir / "rec")
    assert sum(1 for docs in recorded.outcomes.values() for d in docs if d["outcome"].get("consulted")) > 100
    assert _invocations(recorded) == _invocations(Recording.load(tmp_path / "rec"))


def _invocations(rec: Any) -> dict[str, list[str]]:
    """Per recording key, what each of its invocations gave (its outputs' text, not their timings), in any order."""
    def seen(doc: dict[str, Any]) -> str:
        out = {k: v for k, v in doc["outcome"].items() if k not in ("duration", "cpu")}
        for stream in ("stdout", "stderr"):
            text = rec.blobs[out[stream]]
            try:
                out[stream] = _scrub(json.loads(text))
            except ValueError:
                out[stream] = text
        out["transcript"] = _scrub(out["transcript"])
        return json.dumps(out, sort_keys=True, ensure_ascii=False)

    return {key: sorted(seen(d) for d in docs) for key, docs in rec.outcomes.items()}


#: What differs between any two runs of one invocation: a clock (the request's, a "now" argument, a search window
#: ending now), the fake server's port, a random execution id.
_UNSTABLE = {"time", "startTime", "endTime", "host", "x-cli-execution-id"}


def _scrub(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items() if k not in _UNSTABLE}
    return [_scrub(v) for v in value] if isinstance(value, list) else value


class _Run:
    """A report read as tests/targeted.py's ``verdicts`` reads a ContractRun."""

    def __init__(self, report: dict[str, Any]) -> None:
        self.gates = report["gates"]


@pytest.mark.parametrize(("cli", "modules"), [("/bin/true", "refdws.cli"), ("{python} -I -S " + str(REPO / "fixtures"
                                              / "reference" / "dws"), "refdws.cli 1st")])
def test_a_warm_start_of_what_it_cannot_start_warm_is_a_usage_error(run_contract: Any, cli: str, modules: str) -> None:
    """Not a script launched as ``{python} -I -S SCRIPT``, or a word that is no module name: exit 4, one line naming
    the option (never a silent cold run that the user believes warm)."""
    run = run_contract("--dws-cli", cli, f"--dws-warm-start={modules}")
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    assert "--dws-warm-start" in run.output() and "Traceback" not in run.output()
