"""Release facts are data (issue 24 (7)): the doc-named commands and tools the gates look up come from
``inputs/data/release_facts.toml``, a release folder's expectations file replaces any of them, and a malformed
one is one line naming the file and the JSON path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_dws.inputs.expectations import load_expectations
from pytest_dws.inputs.release_facts import defaults, schema_facts, table

REF = Path(__file__).resolve().parents[1] / "fixtures" / "reference"


def test_the_packaged_facts_are_the_documents_names() -> None:
    facts = defaults()
    assert facts["schema"]["retired"][0]["path"] == "chat file upload"
    assert "chat.send_personal_message" in facts["chat_identities"]


def test_a_release_replaces_a_fact_with_data(tmp_path: Path) -> None:
    expect = tmp_path / "expectations.toml"
    expect.write_text('[schema]\nhelper_backed = ["chat message post"]\n\n'
                      '[chat_identities."chat.send_personal_message"]\nprimary_cli_path = "chat message post"\n',
                      encoding="utf-8")
    loaded = load_expectations(expect)
    assert schema_facts(loaded)["helper_backed"] == ["chat message post"]
    assert schema_facts(loaded)["hidden_groups"] == defaults()["schema"]["hidden_groups"]
    assert table(loaded, "chat_identities") == {"chat.send_personal_message": {"primary_cli_path":
                                                                               "chat message post"}}


def test_a_renamed_identity_is_judged_from_the_release_data(run_contract: Any, tmp_path: Path) -> None:
    """The reference names its send command `chat message send`: a release file that says otherwise fails the
    gate, with no code change."""
    expect = tmp_path / "expectations.toml"
    expect.write_text('[chat_identities."chat.send_personal_message"]\nprimary_cli_path = "chat message post"\n',
                      encoding="utf-8")
    run = run_contract("--dws-source", str(REF), "-k", "SCH-CHAT-IDENTITIES", f"--dws-expect={expect}")
    assert run.status("SCH-CHAT-IDENTITIES") == "failed", run.output()[-1500:]
    assert run_contract("--dws-source", str(REF), "-k", "SCH-CHAT-IDENTITIES").status("SCH-CHAT-IDENTITIES") \
        == "passed"


def test_a_malformed_fact_is_one_line_naming_the_path(run_contract: Any, tmp_path: Path) -> None:
    expect = tmp_path / "expectations.toml"
    expect.write_text('[schema]\nhidden_groups = "conference"\n', encoding="utf-8")
    run = run_contract("--dws-source", str(REF), "--dws-cli", f"{{python}} -I -S {REF / 'dws'}",
                       "-k", "SCH-FALLBACK-NO-UNHIDE", f"--dws-expect={expect}")
    assert run.ret == 4 and "$.schema.hidden_groups" in run.output(), run.output()[-1500:]
