"""The Agent Skills format rules, as `kernels skills validate` checks them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kernel_skills.skill import validate

from .conftest import cli, make_skill


def skill_md(front: str, body: str = "# Skill\n") -> str:
    return f"---\n{front}---\n{body}"


def messages(report) -> str:
    return "\n".join(str(p) for p in report.errors)


def test_a_complete_skill_is_valid(sandbox):
    report = validate(sandbox.bundled / "demo")
    assert report.ok, messages(report)
    assert report.warnings == []
    assert report.name == "demo"


def test_skill_md_must_start_with_front_matter(tmp_path):
    make_skill(tmp_path, "x", skill_md="# no front matter\n")
    report = validate(tmp_path / "x")
    assert not report.ok and "must start with a '---'" in messages(report)


def test_a_byte_order_mark_is_named_as_the_problem(tmp_path):
    make_skill(tmp_path, "x", skill_md="\ufeff---\nname: x\ndescription: d\n---\n")
    report = validate(tmp_path / "x")
    assert not report.ok and "byte order mark" in messages(report)


def test_front_matter_must_be_closed(tmp_path):
    make_skill(tmp_path, "x", skill_md="---\nname: x\ndescription: d\n")
    assert "no closing '---'" in messages(validate(tmp_path / "x"))


def test_front_matter_must_be_yaml_mapping(tmp_path):
    make_skill(tmp_path, "x", skill_md="---\n- a\n- b\n---\n")
    assert "must be a YAML mapping" in messages(validate(tmp_path / "x"))
    make_skill(tmp_path, "y", skill_md="---\nname: y\ndescription: a: b\n---\n")
    report = validate(tmp_path / "y")
    assert "not valid YAML" in messages(report)
    assert report.errors[0].line == 3


@pytest.mark.parametrize(
    "name, problem",
    [
        ("Upper", "lowercase"),
        ("with_underscore", "lowercase"),
        ("double--hyphen", "lowercase"),
        ("-leading", "lowercase"),
        ("trailing-", "lowercase"),
        ("x" * 65, "at most 64"),
    ],
)
def test_name_rules(tmp_path, name, problem):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "SKILL.md").write_text(skill_md(f"name: {name}\ndescription: ok\n"))
    report = validate(folder)
    assert not report.ok
    assert problem in messages(report)


def test_name_of_64_characters_is_fine(tmp_path):
    name = "a" * 64
    make_skill(tmp_path, name)
    assert validate(tmp_path / name).ok


def test_name_must_equal_the_folder_name(tmp_path):
    make_skill(tmp_path, "folder", skill_md=skill_md("name: other\ndescription: ok\n"))
    assert "must equal the folder name 'folder'" in messages(validate(tmp_path / "folder"))


def test_name_and_description_are_required(tmp_path):
    make_skill(tmp_path, "x", skill_md=skill_md("license: MIT\n"))
    text = messages(validate(tmp_path / "x"))
    assert "needs 'name'" in text and "needs 'description'" in text


def test_description_length(tmp_path):
    make_skill(tmp_path, "x", skill_md=skill_md(f"name: x\ndescription: {'d' * 1025}\n"))
    assert "at most 1024" in messages(validate(tmp_path / "x"))
    make_skill(tmp_path, "y", skill_md=skill_md(f"name: y\ndescription: {'d' * 1024}\n"))
    assert validate(tmp_path / "y").ok
    make_skill(tmp_path, "z", skill_md=skill_md("name: z\ndescription: '   '\n"))
    assert "needs 'description'" in messages(validate(tmp_path / "z"))


def test_optional_fields(tmp_path):
    good = "name: x\ndescription: ok\nlicense: MIT\ncompatibility: needs nvcc\nallowed-tools: Bash Read\nmetadata:\n  version: '1'\n  author: me\n"
    make_skill(tmp_path, "x", skill_md=skill_md(good))
    report = validate(tmp_path / "x")
    assert report.ok and not report.warnings, messages(report)

    make_skill(tmp_path, "y", skill_md=skill_md(f"name: y\ndescription: ok\ncompatibility: {'c' * 501}\n"))
    assert "at most 500" in messages(validate(tmp_path / "y"))
    make_skill(tmp_path, "z", skill_md=skill_md("name: z\ndescription: ok\nmetadata:\n  version: 1.0\n"))
    assert "must map a string to a string" in messages(validate(tmp_path / "z"))
    make_skill(tmp_path, "w", skill_md=skill_md("name: w\ndescription: ok\nmetadata: [a]\n"))
    assert "'metadata' must be a mapping" in messages(validate(tmp_path / "w"))
    make_skill(tmp_path, "v", skill_md=skill_md("name: v\ndescription: ok\nallowed-tools: [Bash]\nlicense: 3\n"))
    text = messages(validate(tmp_path / "v"))
    assert "'allowed-tools' must be a string" in text and "'license' must be a string" in text


def test_unknown_keys_and_long_files_are_warnings(tmp_path):
    body = "line\n" * 600
    make_skill(tmp_path, "x", skill_md=skill_md("name: x\ndescription: ok\nversion: 2\n", body))
    report = validate(tmp_path / "x")
    assert report.ok
    text = "\n".join(str(w) for w in report.warnings)
    assert "unknown front matter key 'version'" in text
    assert "keep it under 500" in text


def test_relative_links_must_resolve_with_exact_case(tmp_path):
    body = (
        "See [guide](references/Guide.md), [missing](references/nope.md), [ok](references/guide.md#part),\n"
        "[web](https://example.com/x.md), [anchor](#top), ![img](assets/blob.bin).\n"
        "```\n[in code](not/checked.md)\n```\n"
        "[ref]: references/also-missing.md\n"
    )
    make_skill(tmp_path, "x", skill_md=skill_md("name: x\ndescription: ok\n", body))
    report = validate(tmp_path / "x")
    text = messages(report)
    assert "'references/Guide.md', which does not exist with that case (found 'references/guide.md')" in text
    assert "'references/nope.md', which does not exist" in text
    assert "references/also-missing.md" in text
    assert "not/checked.md" not in text and "example.com" not in text
    assert len(report.errors) == 3
    assert {p.line for p in report.errors} == {5, 10}


def test_what_a_reader_does_not_see_as_a_link_is_not_checked(tmp_path):
    # HTML comments (one line or several), indented code blocks and a path with a line
    # number are not links to missing files; a link after a comment on the same line and an
    # indented paragraph inside a list item still are.
    body = (
        "<!-- [draft](notes/todo.md) --> [real](references/nope.md)\n"
        "<!--\n[also a draft](notes/later.md)\n-->\n"
        "\n"
        "    [code](not/checked.md)\n"
        "\n"
        "See `scripts/tool.py:12` and `scripts/tool.py:12:3`.\n"
        "\n"
        "- a list item\n"
        "\n"
        "    [continued](references/missing-too.md)\n"
    )
    make_skill(tmp_path, "x", skill_md=skill_md("name: x\ndescription: ok\n", body))
    report = validate(tmp_path / "x")
    text = messages(report)
    assert "notes/" not in text and "not/checked.md" not in text and "tool.py" not in text
    assert "'references/nope.md', which does not exist" in text
    assert "'references/missing-too.md', which does not exist" in text
    assert len(report.errors) == 2


@pytest.mark.parametrize(
    "body, missing",
    [
        # A list item continued at two spaces, then an indented paragraph: still the item's text.
        ("- Step\n\n  Details.\n\n    See [g](references/missing.md)\n", "references/missing.md"),
        # A comment whose closing line is indented after a blank line still closes.
        ("<!--\nTODO:\n\n    old -->\n[broken](references/nope.md)\n", "references/nope.md"),
        # `<!--` in a code span is text, not the start of a comment.
        ("Write `<!--` to start a comment. [x](references/gone.md)\n", "references/gone.md"),
    ],
)
def test_links_after_tricky_markdown_are_still_checked(tmp_path, body, missing):
    make_skill(tmp_path, "x", skill_md=skill_md("name: x\ndescription: ok\n", body))
    text = messages(validate(tmp_path / "x"))
    assert f"'{missing}', which does not exist" in text


def test_links_in_other_markdown_files_resolve_from_their_folder(tmp_path):
    make_skill(tmp_path, "x", extra={"references/more.md": "[back](../SKILL.md) [bad](guide.md#x) [worse](../../elsewhere.md)\n"})
    text = messages(validate(tmp_path / "x"))
    assert "references/more.md:1" in text
    assert "'../../elsewhere.md', which is outside the skill" in text
    assert "'guide.md'" not in text  # references/guide.md exists


def test_code_spans_naming_skill_files_in_skill_md_must_exist(tmp_path):
    body = "Run `python scripts/tool.py --fast` then `scripts/missing.py`; build `kernel_src/x.cu` in your project; see `scripts/<name>.py`.\n"
    make_skill(tmp_path, "x", skill_md=skill_md("name: x\ndescription: ok\n", body))
    report = validate(tmp_path / "x")
    assert [str(p) for p in report.errors] == ["SKILL.md:5: names 'scripts/missing.py', which does not exist"]


def test_symlinks_must_stay_inside_the_skill(tmp_path):
    make_skill(tmp_path, "x")
    (tmp_path / "secret.txt").write_text("s")
    os.symlink("../../secret.txt", tmp_path / "x/references/leak.txt")
    os.symlink("guide.md", tmp_path / "x/references/alias.md")
    os.symlink("nowhere.md", tmp_path / "x/references/dangling.md")
    text = messages(validate(tmp_path / "x"))
    assert "references/leak.txt: is a symlink to ../../secret.txt, outside the skill" in text
    assert "references/dangling.md: is a broken symlink" in text
    assert "alias.md" not in text


def test_special_files_are_refused(tmp_path):
    make_skill(tmp_path, "x")
    os.mkfifo(tmp_path / "x/assets/pipe")
    assert "assets/pipe: is not a regular file" in messages(validate(tmp_path / "x"))


def test_missing_folder_and_missing_skill_md(tmp_path):
    assert "does not exist" in messages(validate(tmp_path / "nope"))
    (tmp_path / "empty").mkdir()
    assert "SKILL.md: missing" in messages(validate(tmp_path / "empty"))


# -------------------------------------------------------------------------- the command


def test_validate_command_exit_codes_and_output(sandbox, tmp_path):
    ok = cli("skills", "validate", str(sandbox.bundled / "demo"))
    assert ok.exit_code == 0 and ok.stdout.startswith("valid")
    make_skill(tmp_path, "bad", skill_md=skill_md("name: Bad\ndescription: ok\n"))
    bad = cli("skills", "validate", str(sandbox.bundled / "demo"), str(tmp_path / "bad"))
    assert bad.exit_code == 1
    assert "invalid" in bad.stderr and "name 'Bad' is invalid" in bad.stderr


def test_validate_command_json(sandbox, tmp_path):
    make_skill(tmp_path, "warn", skill_md=skill_md("name: warn\ndescription: ok\nextra: 1\n"))
    result = cli("skills", "validate", str(tmp_path / "warn"), "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["ok"] is True
    assert data["results"][0]["valid"] is True
    assert "extra" in data["results"][0]["warnings"][0]["message"]
    missing = cli("skills", "validate", str(tmp_path / "nope"), "--json")
    assert missing.exit_code == 1 and json.loads(missing.stdout)["ok"] is False


def test_validate_relative_path_from_cwd(sandbox):
    make_skill(Path.cwd(), "here")
    assert cli("skills", "validate", "here").exit_code == 0
