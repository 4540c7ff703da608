"""R1.7 re-serialisation: the fast orjson path writes exactly the bytes of the stdlib reference encoder, and
floats are spelled as Go's ``encoding/json`` spells them (the one place Python and Go disagree).

The Go spellings below are what ``json.Marshal(float64)`` prints (``strconv.AppendFloat(.., 'f'|'e', -1, 64)``
plus the ``e-07`` -> ``e-7`` clean-up of ``encoding/json/encode.go: floatEncoder``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import synth
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_dws.inputs.catalog import hashes, load_release

#: JSON values without floats: every character class the escaping cares about, deep nesting, 64-bit ints.
_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12) | st.sampled_from(
    ["<a&b>", "\u2028\u2029", "\x00\x1f\x7f", "\b\f\n\r\t", '"\\/', "群聊", "\U0001f600"])
_SCALAR = st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64 - 1) | _TEXT
_VALUE = st.recursive(_SCALAR, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
                      max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(_VALUE)
def test_fast_path_equals_the_stdlib_reference(value) -> None:
    assert hashes.go_json(value, floats=False) == hashes._go_json_stdlib(value)


@pytest.mark.parametrize(("number", "go"), [
    (0.0, "0"), (-0.0, "-0"), (1.0, "1"), (100.0, "100"), (1.5, "1.5"), (-2.25, "-2.25"), (0.1, "0.1"),
    (1e-6, "0.000001"), (1e-7, "1e-7"), (1.5e-10, "1.5e-10"), (1e16, "10000000000000000"),
    (123456789.125, "123456789.125"), (1e20, "100000000000000000000"), (1e21, "1e+21"), (1.5e300, "1.5e+300"),
    (5e-324, "5e-324"),
])
def test_go_float_spelling(number: float, go: str) -> None:
    assert hashes.go_float(number) == go


def test_floats_are_written_as_go_writes_them() -> None:
    value = {"max": 1.0, "ratio": [0.5, 1e-7], "n": 3}
    assert hashes.go_json(value) == b'{"max":1,"n":3,"ratio":[0.5,1e-7]}'
    assert hashes.go_json(value, floats=True) == hashes.go_json(value)


def test_values_orjson_refuses_take_the_stdlib_path() -> None:
    big = {"n": 2**70, "s": "<"}
    assert hashes.go_json(big, floats=False) == b'{"n":1180591620717411303424,"s":"\\u003c"}'


def test_loader_sees_floats_and_the_hash_follows_go(tmp_path: Path) -> None:
    """A cf catalog with a float in a leaf: the loader notices it (for free, at parse time) and the
    re-serialised catalog spells it as Go does, not as Python's ``2.0``."""
    tree = synth.build("cf").write(tmp_path / "cf")
    assert load_release(source=tree).floats is False
    doc = json.loads((tree / "internal/cli/schema_catalog.json").read_bytes())
    key = next(iter(doc["tools"]))
    doc["tools"][key]["x_weight"] = 2.0
    path = tmp_path / "schema_catalog.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    floaty = load_release(catalog=path)
    assert floaty.floats is True
    assert b'"x_weight":2,' in floaty.canonical or b'"x_weight":2}' in floaty.canonical
