"""Result mapping: text to output, structured content to data, other content summarised."""

from __future__ import annotations

from toolctl.mcp import map_result


def test_text_joined_and_json_text_as_data() -> None:
    answer = map_result({"content": [{"type": "text", "text": '{"a": 1}'}]})
    assert answer == ('{"a": 1}', {"a": 1}, False)
    two = map_result({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})
    assert two == ("a\nb", None, False)


def test_structured_content_wins_and_is_error_is_kept() -> None:
    answer = map_result(
        {"content": [{"type": "text", "text": "x"}], "structuredContent": {"n": 2}, "isError": True}
    )
    assert answer == ("x", {"n": 2}, True)


def test_images_and_resources_go_to_data_with_a_summary() -> None:
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    resource = {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hi"}}
    link = {"type": "resource_link", "uri": "file:///b", "name": "b"}
    answer = map_result({"content": [{"type": "text", "text": "see"}, image, resource, link]})
    assert (
        answer.output
        == "see\n[image image/png, 3 B, resource file:///a.txt, resource link file:///b]"
    )
    assert answer.data == {"content": [image, resource, link]}


def test_odd_shapes_do_not_raise() -> None:
    assert map_result({"content": [{"type": "video"}]}).output == "[video content]"
    assert map_result({"structuredContent": {"a": 1}}) == ("", {"a": 1}, False)  # older servers


def test_a_result_with_nothing_or_a_flag_that_is_no_flag_is_an_error() -> None:
    """`{}` (no content, which a result must have) and `"isError": "yes"` read as a
    success with nothing in it."""
    empty = map_result({})
    assert empty == ("the MCP server's result is malformed: it has no 'content'", None, True)
    flagged = map_result({"content": [{"type": "text", "text": "x"}], "isError": "yes"})
    assert flagged.is_error
    assert (
        flagged.output
        == "the MCP server's result is malformed: 'isError' is str, not true or false"
    )


def test_content_that_is_not_a_list_of_objects_is_an_error() -> None:
    """Issue #24: ``{"content": "notalist"}`` used to count as a success with no output."""
    for content, shown in (("notalist", "str"), ({"type": "text"}, "dict"), (7, "int")):
        answer = map_result({"content": content, "isError": True})
        assert answer.is_error and answer.data is None
        expected = f"the MCP server's result is malformed: 'content' is {shown}, not a list"
        assert answer.output == expected
    items = map_result({"content": [1, None, {"type": "video"}]})
    assert items.is_error and "a 'content' item is int, not an object" in items.output
