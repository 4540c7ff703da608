"""The reference's JSON (fixtures/reference/refdws/jsonc.py) writes and reads exactly what :mod:`json` does.

Why: the reference reads and writes JSON through the C accelerator alone, without importing json (issue 44: json
imports re and enum, a third of every start). Its outputs are what every gate of the main job reads, so the text
must be json's byte for byte, for every layout the reference uses, and a document that json refuses must be
refused the same way (json's own error). Generated documents (hypothesis), not examples.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tests.refdws_harness  # puts the reference on sys.path

jsonc = importlib.import_module("refdws.jsonc")

SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
KEYS = st.text() | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
DOCUMENTS = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                         | st.dictionaries(st.text(), inner, max_size=4), max_leaves=25)
#: Every way the reference calls json.dumps (refdws/*.py).
LAYOUTS: list[dict[str, Any]] = [
    {}, {"ensure_ascii": False}, {"ensure_ascii": False, "separators": (",", ":")},
    {"ensure_ascii": False, "indent": 2}, {"ensure_ascii": False, "indent": 4},
    {"sort_keys": True, "separators": (",", ":"), "ensure_ascii": False},
    {"ensure_ascii": False, "sort_keys": True, "indent": 2},
]


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "default")
@settings(max_examples=150, deadline=None)
@given(document=DOCUMENTS)
def test_dumps_writes_jsons_text(layout: dict[str, Any], document: Any) -> None:
    assert jsonc.dumps(document, **layout) == json.dumps(document, **layout)


@settings(max_examples=100, deadline=None)
@given(keys=st.lists(KEYS, max_size=5, unique_by=lambda k: json.dumps(k)), indent=st.sampled_from([None, 2]))
def test_non_string_keys_are_written_as_json_writes_them(keys: list[Any], indent: int | None) -> None:
    document = {k: i for i, k in enumerate(keys)}
    assert jsonc.dumps(document, indent=indent) == json.dumps(document, indent=indent)


@settings(max_examples=200, deadline=None)
@given(document=DOCUMENTS, pad=st.sampled_from(["", " ", "\n\t ", "\r\n"]))
def test_loads_reads_what_json_reads(document: Any, pad: str) -> None:
    text = pad + json.dumps(document, indent=None if len(pad) % 2 else 1) + pad
    assert json.dumps(jsonc.loads(text)) == json.dumps(json.loads(text))
    assert json.dumps(jsonc.loads(text.encode("utf-8"))) == json.dumps(json.loads(text.encode("utf-8")))


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet='{}[]":,0123456789.eE+-tfnrul aN\\\n', max_size=20))
def test_a_document_json_refuses_is_refused_with_jsons_error(text: str) -> None:
    try:
        expected: Any = json.dumps(json.loads(text))
    except ValueError as exc:
        expected = (type(exc), str(exc))
    try:
        got: Any = json.dumps(jsonc.loads(text))
    except ValueError as exc:
        got = (type(exc), str(exc))
    assert got == expected


def test_a_value_json_cannot_write_gets_jsons_error() -> None:
    for layout in LAYOUTS:
        with pytest.raises(TypeError) as ours:
            jsonc.dumps({"a": {1, 2}}, **layout)
        with pytest.raises(TypeError) as theirs:
            json.dumps({"a": {1, 2}}, **layout)
        assert str(ours.value) == str(theirs.value)


def test_a_malformed_document_gets_jsons_error_in_a_process_that_never_imported_json() -> None:
    """The reference's own situation: the C scanner reports a malformed document through json.decoder's error
    class, which it finds only once json.decoder is imported; jsonc answers with json's own error anyway."""
    import subprocess
    import sys

    script = ("import sys; sys.path.insert(0, sys.argv[1]); from refdws import jsonc\n"
              "assert 'json' not in sys.modules\n"
              "for text in ('{x', '', '[1,]', '{\"a\": 1} 2'):\n"
              "    try:\n        jsonc.loads(text)\n    except ValueError as exc:\n"
              "        print(type(exc).__name__, exc)\n")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", script, str(tests.refdws_harness.DWS.parent)],
                         capture_output=True, text=True, check=True, timeout=60).stdout.splitlines()
    expected = []
    for text in ("{x", "", "[1,]", '{"a": 1} 2'):
        try:
            json.loads(text)
        except ValueError as exc:
            expected.append(f"{type(exc).__name__} {exc}")
    assert out == expected

