"""Source-tree gates on violating copies of the reference tree: Skills, fitting, drift, tree hygiene, and the
Go pass-through FIN gates (with shim toolchains). Each violating input makes exactly its gates fail."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
import synth

from tests.conftest import reference_copy
from tests.test_data_gates import CASES
from tests.test_schema_mutants import REF, reference_args

SKILL_GATES = ["FIN-SKILL-COMMANDS", "SCH-SKILL-NO-PHANTOM", "ALI-SKILL-NOT-DEFAULT", "FIT-NO-OVERFIT"]
REGEN_GATES = ["SCH-BYTE-IDENTICAL", "SCH-NO-DRIFT", "SCH-SURFACE-REVIEWED-INPUT", "SCH-GEN-OFFLINE"]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A private copy of the reference tree (the violating input is written into it)."""
    return reference_copy(tmp_path / "ref")


def judge(run_contract, tree: Path, gates: list[str], *extra: str) -> set[str]:
    select = " or ".join("FIT-NO-OVERFIT[src]" if g == "FIT-NO-OVERFIT" else g for g in gates)
    run = run_contract(*reference_args(*extra, tree=tree, select=select))
    assert all(run.status(g) is not None for g in gates), run.output()[-2000:]
    return run.failing() & set(gates)


def add_skill_line(tree: Path, line: str) -> None:
    skill = tree / "skills" / "dingtalk-chat" / "SKILL.md"
    skill.write_text(skill.read_text(encoding="utf-8") + "\n" + line + "\n", encoding="utf-8")


@pytest.mark.slow
def test_skill_gates_pass_on_the_reference(run_contract, tree: Path) -> None:
    assert judge(run_contract, tree, SKILL_GATES) == set()


@pytest.mark.slow
@pytest.mark.parametrize(("line", "kills"), [
    ("列出机器人：`dws chat +bot-list --group <openConversationId>`", {"FIN-SKILL-COMMANDS", "SCH-SKILL-NO-PHANTOM"}),
    ("按发送人过滤：`dws chat +search-msg --query 周报 --sender-id <userId>`", {"SCH-SKILL-NO-PHANTOM"}),
    ("按关键词搜索：`dws chat +search-msg --text 周报`", {"ALI-SKILL-NOT-DEFAULT"}),
    ("改名：`dws chat +chat-rename --group <openConversationId> --name 新名`",
     {"ALI-SKILL-NOT-DEFAULT", "FIN-SKILL-COMMANDS", "SCH-SKILL-NO-PHANTOM"}),
    ("测试时用群 dws测试群01。", {"FIT-NO-OVERFIT"}),
    ("❌ 不要使用：`dws chat +chat-rename --group <openConversationId> --name 新名`", set()),
    # issue 43: a negation in another clause of the line does not make the alias a counter-example
    ("推荐 `dws chat +chat-rename --group <openConversationId> --name 新名`，避免先查 CID", {"ALI-SKILL-NOT-DEFAULT"}),
])
def test_skill_violations(run_contract, tree: Path, line: str, kills: set[str]) -> None:
    add_skill_line(tree, line)
    assert judge(run_contract, tree, SKILL_GATES) == kills


@pytest.mark.slow
def test_the_reviewed_rename_route_must_be_recommended(run_contract, tree: Path) -> None:
    """D1 §5 row 7, §7.3 b4 (issue 43): Skills recommend `chat group rename --id --name` (the profile's skill_route of
    +chat-rename); a Skill that only shows it without --id (or not at all) fails ALI-SKILL-NOT-DEFAULT."""
    for md in (tree / "skills").rglob("*.md"):
        text = md.read_text(encoding="utf-8")
        md.write_text(text.replace("group rename --id <openConversationId> ", "group rename "), encoding="utf-8")
    assert judge(run_contract, tree, SKILL_GATES) == {"ALI-SKILL-NOT-DEFAULT"}


@pytest.mark.slow
def test_fitted_literal_in_runtime_code(run_contract, tree: Path) -> None:
    (tree / "refdws" / "fitted.py").write_text('CASE = "H4"\nCID = "cidTESTfixedAAAA0001"\n', encoding="utf-8")
    assert judge(run_contract, tree, SKILL_GATES) == {"FIT-NO-OVERFIT"}


@pytest.mark.slow
def test_stale_committed_metadata_is_drift(run_contract, tree: Path) -> None:
    index = tree / "internal" / "cli" / "schema_agent_metadata" / "index.json"
    index.write_text(index.read_text(encoding="utf-8").replace("\n", "\n ", 1), encoding="utf-8")
    assert judge(run_contract, tree, REGEN_GATES) == {"SCH-NO-DRIFT", "SCH-GEN-OFFLINE"}


@pytest.mark.slow
def test_generator_writing_the_target_tree_fails_every_regen_gate(run_contract, tree: Path) -> None:
    """A generator that writes into the tree the user gave: jailed (issue 45), the write is refused and the
    generation fails (the tree stays unwritten); with proxy-only isolation the write lands and every regeneration
    gate fails on the tree, before vs after."""
    marker = tree / "written-by-generator.txt"
    gen = f"{{python}} -c \"import pathlib; pathlib.Path('{marker}').write_text('x')\""
    args = reference_args(tree=tree, generator=gen, select=" or ".join(REGEN_GATES))
    jailed = run_contract(*args)
    assert jailed.ret == 1 and not marker.exists(), jailed.output()[-2000:]
    assert {"SCH-BYTE-IDENTICAL", "SCH-GEN-OFFLINE", "SCH-NO-DRIFT"} <= jailed.failing(), jailed.output()[-2000:]
    proxy = run_contract(*args, "--dws-isolation=proxy")
    assert marker.exists() and proxy.failing() & set(REGEN_GATES) == set(REGEN_GATES), proxy.output()[-2000:]
    assert all("before vs after" in proxy.gates[g].get("detail", "") + proxy.output() for g in REGEN_GATES)


# -- FIN pass-through gates --------------------------------------------------------------------------------------
FIN_GO = ["FIN-GOFMT", "FIN-FOCUSED-TESTS", "FIN-GO-GENERATE", "FIN-DRIFT", "FIN-GO-TEST-ALL"]
FIN_SELECT = "FIN-GO or FIN-DRIFT or FIN-SCHEMA-CATALOG or FIN-FOCUSED"


def test_fin_gates_not_applicable_without_go_module(run_contract) -> None:
    """On the (Python) reference the Go pass-throughs do not apply; FIN-SCHEMA-CATALOG is judged black-box."""
    run = run_contract("--dws-source", str(REF), "--dws-expect", str(REF / "expectations.toml"), "-k", FIN_SELECT)
    assert {g: run.status(g) for g in FIN_GO} == dict.fromkeys(FIN_GO, "not_applicable")
    assert all("no go.mod" in " ".join(run.gates[g]["notes"]) for g in FIN_GO), run.gates
    fin = run.gates["FIN-SCHEMA-CATALOG"]
    assert (fin["status"], fin["items"]) == ("passed", {"not_applicable": 1, "passed": 1}), run.output()[-2000:]
    assert "no go.mod" in " ".join(fin["notes"])  # the script part, on a tree that is not a Go module


def test_fin_gates_pass_through_go_tree(run_contract, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Go tree with shim toolchains: gofmt lists a file and the drift script fails; the rest pass. The tree has
    no catalog, so FIN-SCHEMA-CATALOG is only its upstream script (which passes here)."""
    bindir, go_tree = tmp_path / "bin", tmp_path / "gotree"
    bindir.mkdir()
    (bindir / "go").write_text("#!/bin/sh\nexit 0\n")
    (bindir / "gofmt").write_text("#!/bin/sh\necho internal/app/root.go\n")
    for shim in bindir.iterdir():
        shim.chmod(0o755)
    (go_tree / "internal" / "cli").mkdir(parents=True)
    (go_tree / "scripts" / "policy").mkdir(parents=True)
    (go_tree / "go.mod").write_text("module example.com/dws\n\ngo 1.22\n")
    (go_tree / "scripts" / "policy" / "check-generated-drift.sh").write_text(textwrap.dedent("""\
        echo "generated drift: internal/cli/schema_catalog is stale" >&2
        exit 1
    """))
    (go_tree / "scripts" / "policy" / "check-schema-catalog.sh").write_text("echo schema catalog ok\n")
    monkeypatch.setenv("PATH", f"{bindir}:{Path(shutil.which('sh') or '/bin/sh').parent}")
    run = run_contract("--dws-source", str(go_tree), "-k", FIN_SELECT)
    assert {g: run.status(g) for g in [*FIN_GO, "FIN-SCHEMA-CATALOG"]} == {
        "FIN-GOFMT": "failed", "FIN-FOCUSED-TESTS": "passed", "FIN-GO-GENERATE": "passed", "FIN-DRIFT": "failed",
        "FIN-SCHEMA-CATALOG": "passed", "FIN-GO-TEST-ALL": "passed"}, run.output()[-2000:]
    assert any("no committed catalog" in n for n in run.gates["FIN-SCHEMA-CATALOG"]["notes"])


#: Issue 43: the three `go` pass-throughs shown failing, each on its own path (a stub `go` that exits non-zero
#: for the command the gate runs and 0 for the others): the gate that runs it fails, the other two pass.
GO_FAILS = {
    "FIN-FOCUSED-TESTS": 'case "$*" in *internal/errors*) echo "FAIL internal/errors" >&2; exit 1;; esac',
    "FIN-GO-GENERATE": 'case "$1" in generate) echo "generate: boom" >&2; exit 1;; esac',
    "FIN-GO-TEST-ALL": 'case "$*" in *./...*) echo "FAIL ./..." >&2; exit 1;; esac',
}


@pytest.mark.parametrize("gate", sorted(GO_FAILS))
def test_fin_go_pass_through_fails_when_go_fails(run_contract, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 gate: str) -> None:
    bindir, go_tree = tmp_path / "bin", tmp_path / "gotree"
    bindir.mkdir()
    (bindir / "go").write_text(f"#!/bin/sh\n{GO_FAILS[gate]}\nexit 0\n")
    (bindir / "gofmt").write_text("#!/bin/sh\nexit 0\n")
    for shim in bindir.iterdir():
        shim.chmod(0o755)
    (go_tree / "internal" / "cli").mkdir(parents=True)
    (go_tree / "go.mod").write_text("module example.com/dws\n\ngo 1.22\n")
    monkeypatch.setenv("PATH", f"{bindir}:{Path(shutil.which('sh') or '/bin/sh').parent}")
    run = run_contract("--dws-source", str(go_tree), "-k", "FIN-FOCUSED or FIN-GO-GENERATE or FIN-GO-TEST-ALL")
    assert {g: run.status(g) for g in GO_FAILS} == {g: "failed" if g == gate else "passed" for g in GO_FAILS}, \
        run.output()[-2000:]


# -- FIN-SCHEMA-CATALOG judged black-box (the §1E DATA gates, pytest_dws.observe.rejudge) -----------------------
def _synthetic(root: Path, gate: str, generation: str, mutate: Any) -> Path:
    t = synth.build(generation)
    mutate(t)
    return t.write(root / f"{gate}-{generation}", rehash=gate != "SCH-HASHES")


def test_fin_schema_catalog_fails_on_every_broken_data_gate(tmp_path: Path) -> None:
    """Every DATA-gate violation of tests/test_data_gates.py fails the aggregate, naming that gate (no pytest
    session: the gate function on a plain context)."""
    from pytest_dws.gates import fin
    from pytest_dws.observe.rejudge import data_context

    fin.schema_catalog(data_context(source=synth.build("cf").write(tmp_path / "clean")))
    for gate, generation, mutate in CASES:
        ctx = data_context(source=_synthetic(tmp_path, gate, generation, mutate))
        with pytest.raises(AssertionError) as failed:
            fin.schema_catalog(ctx)
        assert gate in str(failed.value), (gate, generation)


@pytest.mark.parametrize(("gate", "generation"), [("SCH-DESTRUCTIVE", "cf"), ("SCH-HASHES", "e81")])
def test_fin_schema_catalog_fails_with_the_broken_gate(run_contract, tmp_path: Path, gate: str,
                                                       generation: str) -> None:
    mutate = dict(((g, layout), m) for g, layout, m in CASES)[(gate, generation)]
    run = run_contract("--dws-source", _synthetic(tmp_path, gate, generation, mutate), "-m", "dws_sch or dws_fin")
    assert run.failing() == {gate, "FIN-SCHEMA-CATALOG"}, run.output()[-3000:]
    assert run.gates["FIN-SCHEMA-CATALOG"]["failed_items"] == ["catalog"]
    assert "Traceback" not in run.output()


def test_fin_schema_catalog_leaves_baselined_items_to_their_gate(run_contract, tmp_path: Path) -> None:
    mutate = dict(((g, layout), m) for g, layout, m in CASES)[("SCH-HINT-PRECEDENCE", "cf")]
    base = tmp_path / "baseline.toml"
    base.write_text('[expected_failures]\n"SCH-HINT-PRECEDENCE[chat.send_personal_message]" = "known deviation"\n')
    run = run_contract("--dws-source", _synthetic(tmp_path, "SCH-HINT-PRECEDENCE", "cf", mutate),
                       "--dws-baseline", base, "-m", "dws_sch or dws_fin")
    assert run.ret == 0, run.output()[-3000:]
    assert (run.status("SCH-HINT-PRECEDENCE"), run.status("FIN-SCHEMA-CATALOG")) == ("xfailed", "passed")


def _fit(run_contract, tree: Path) -> Any:
    return run_contract(*reference_args(tree=tree, select="FIT-NO-OVERFIT[src] or FIT-NO-OVERFIT[snapshots]"))


@pytest.mark.slow
@pytest.mark.parametrize("code", [
    'OWNER = {"userId": "0421325943"}\n',                                  # D1 §9.1: a fixed user ID
    'def route(prompt):\n    if "把周报发到项目群" in prompt:\n        return 1\n',  # a branch on one prompt's words
])
def test_fitting_in_runtime_code_fails_the_source_scan(run_contract, tree: Path, code: str) -> None:
    (tree / "refdws" / "fitted.py").write_text(code, encoding="utf-8")
    run = _fit(run_contract, tree)
    parts = run.gates["FIT-NO-OVERFIT"]["parts"]
    assert parts["src"]["outcome"] == "failed" and parts["snapshots"]["outcome"] == "passed", run.output()[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("value", ['"openConversationId": "cidACeQ0fCtKfLsFGvA47gXaQ=="', '"userId": "0421325943"',
                                   '"trace_id": "0bc1f2e3a4d5"', '"title": "dws测试群01"'])
def test_real_business_data_in_a_test_snapshot_fails(run_contract, tree: Path, value: str) -> None:
    """D1 §9.2 "不把真实业务数据写入测试快照": a snapshot may hold synthetic IDs only (they say so)."""
    snap = tree / "tests" / "snapshots" / "leaked.json"
    snap.write_text("{" + value + "}\n", encoding="utf-8")
    run = _fit(run_contract, tree)
    parts = run.gates["FIT-NO-OVERFIT"]["parts"]
    assert parts["snapshots"]["outcome"] == "failed" and parts["src"]["outcome"] == "passed", run.output()[-2000:]
    assert "leaked.json:1" in run.output()


@pytest.mark.slow
@pytest.mark.parametrize(("name", "text"), [
    ("refdws/chat_test.go", 'package chat\n\nconst group = "cidACeQ0fCtKfLsFGvA47gXaQ=="\n'),   # a Go test, beside code
    ("refdws/lark_alignment_test.go", 'package chat\n\nvar raw = `dws chat +search-group --name "dws测试群01"`\n'),
    ("tests/test_members.py", 'GROUP = "dws测试群02"\n'),
    ("tests/snapshots/leaked.md", "| group | dws测试群01 |\n"),             # any file under a snapshot folder
])
def test_real_business_data_in_a_test_source_fails(run_contract, tree: Path, name: str, text: str) -> None:
    """Issue 43 (D1 §9.1, §9.2): the snapshot scan reads every test source wherever it lives (`*_test.go` beside the
    code) and every text file under a test or snapshot folder, whatever its suffix; the source scan still judges
    runtime code only."""
    path = tree / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    run = _fit(run_contract, tree)
    parts = run.gates["FIT-NO-OVERFIT"]["parts"]
    assert parts["snapshots"]["outcome"] == "failed" and parts["src"]["outcome"] == "passed", run.output()[-2000:]
    assert f"{Path(name).name}:" in run.output()


@pytest.mark.slow
@pytest.mark.parametrize("mutant", ["", "schema-skips-hidden"])
def test_a_hidden_product_the_release_does_not_name_is_judged(run_contract, tree: Path, mutant: str) -> None:
    """D2 §4, §9 b12 (issue 43): SCH-HIDDEN-SUBTREE judges every product the root --help does not list, not only the
    ones the release names (`hidden_products`): with none named and a sample of one tool, the reference's hidden
    products are still judged (`dws schema <product>`), and a schema that skips them fails."""
    expect = tree / "expectations.toml"
    expect.write_text(expect.read_text(encoding="utf-8").replace('hidden_products = ["conference", "calendar"]',
                                                                  "hidden_products = []"), encoding="utf-8")
    extra = ("--dws-env", f"DWS_REF_MUTANT={mutant}") if mutant else ()
    run = run_contract(*reference_args(*extra, tree=tree, select="SCH-HIDDEN-SUBTREE", sample=("--dws-sample", "1")))
    assert run.status("SCH-HIDDEN-SUBTREE") == ("failed" if mutant else "passed"), run.output()[-2000:]
