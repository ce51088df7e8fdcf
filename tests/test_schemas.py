"""JSON Schema in descriptors: the vendored meta-schema, checks that never crash or fetch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import fastjsonschema
import pytest

from toolctl.schemas import DRAFT7, SchemaProblem, check_parameters, compile_schema
from toolctl.schemas import draft7 as _draft7

SCHEMAS = [
    {"type": "object"},
    {"properties": 5},
    {"dependencies": {"a": 5}},
    {"dependencies": {"a": ["b"]}},
    {"properties": {"a": {"pattern": "("}}},
    {"patternProperties": {"(": {}}},
    {"multipleOf": 0},
    {"multipleOf": 0.5},
    {"required": ["a", "a"]},
    {"type": "nope"},
    {"items": [{"type": "string"}, 3]},
    {"enum": []},
    {"minLength": -1},
    {"additionalProperties": {"type": "integer"}},
    {"if": {"type": "string"}, "then": 1},
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_vendored_meta_schema_agrees_with_a_fresh_compile(schema: object) -> None:
    fresh: Callable[[Any], Any] = fastjsonschema.compile(DRAFT7, use_default=False)
    vendored: Callable[[Any], Any] = _draft7.validate
    outcomes = []
    for validator in (fresh, vendored):
        try:
            validator(schema)
            outcomes.append(True)
        except fastjsonschema.JsonSchemaValueException:
            outcomes.append(False)
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_checking_a_schema_never_raises_anything_but_schema_problem(schema: dict[str, Any]) -> None:
    try:
        check_parameters(schema)
    except SchemaProblem as exc:
        assert "\n" not in str(exc)


def test_compiling_never_fetches_and_never_crashes() -> None:
    with pytest.raises(SchemaProblem, match="is not in the descriptor"):
        compile_schema({"$ref": "http://127.0.0.1:9/x.json"})
    with pytest.raises(SchemaProblem):
        compile_schema({"properties": 5})  # skipped the meta-schema: still one clean error


def test_a_ref_that_never_descends_is_found_and_a_recursive_tree_is_not() -> None:
    """Validation of a ``$ref`` chain that comes back without descending into the value
    never ends, so such a schema is refused when read; one that recurses into the value's
    parts (a tree) ends with the value."""
    from toolctl.schemas import SchemaProblem, check_parameters, endless_ref

    loop = {
        "type": "object",
        "definitions": {"x": {"$ref": "#/definitions/y"}, "y": {"$ref": "#/definitions/x"}},
        "properties": {"a": {"$ref": "#/definitions/x"}},
    }
    assert endless_ref(loop) and endless_ref({"allOf": [{"$ref": "#"}]})
    with pytest.raises(SchemaProblem, match="refers back to itself without end"):
        check_parameters(loop)
    tree = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "children": {"items": {"$ref": "#"}}},
    }
    assert not endless_ref(tree)
    check_parameters(tree)
    shared = {"definitions": {"s": {"type": "string"}}, "anyOf": [{"$ref": "#/definitions/s"}]}
    assert not endless_ref(shared)
