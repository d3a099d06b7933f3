"""SKILL.md discovery, skip reasons, the byte-exact skill tool and the skills prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolnexus import SkillDef, list_skills
from toolnexus.skills import render_skill, skill_tool, skills_prompt

from .helpers import write_skill


def test_example_skills_are_real(example_skills: Path):
    found = list_skills(example_skills)
    assert [s.name for s in found.skills] == ["greet", "report", "weather"]
    assert found.skipped == []
    weather = next(s for s in found.skills if s.name == "weather")
    assert weather.tags == ["weather", "forecast"]
    assert weather.examples[0] == "what's the weather in Oslo?"
    assert sorted(Path(f).name for f in weather.files()) == [
        "climate.csv",
        "forecast.py",
        "units.md",
    ]


async def test_skill_tool_output_is_byte_exact(tmp_path: Path):
    folder = tmp_path / "skills" / "hello"
    write_skill(folder, "hello", body="  Say hello.\n\n", description="says hello")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "run.sh").write_text("echo hi\n")
    found = list_skills(tmp_path / "skills")
    result = await skill_tool(found.skills).execute({"name": "hello"})
    assert not result.is_error
    assert result.output == (
        '<skill_content name="hello">\n'
        "# Skill: hello\n"
        "\n"
        "Say hello.\n"
        "\n"
        f"Base directory for this skill: {folder.absolute().as_uri()}\n"
        "Relative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.\n"
        "Note: file list is sampled.\n"
        "\n"
        "<skill_files>\n"
        f"<file>{folder.absolute()}/scripts/run.sh</file>\n"
        "</skill_files>\n"
        "</skill_content>"
    )


def test_file_skill_without_files_keeps_an_empty_block(tmp_path: Path):
    write_skill(tmp_path / "a", "a")
    (skill,) = list_skills(tmp_path).skills
    assert render_skill(skill).endswith(
        "Note: file list is sampled.\n\n<skill_files>\n\n</skill_files>\n</skill_content>"
    )


def test_at_most_ten_files_are_sampled(tmp_path: Path):
    folder = tmp_path / "many"
    write_skill(folder, "many")
    for i in range(15):
        (folder / f"f{i:02}.txt").write_text("x")
    (skill,) = list_skills(tmp_path).skills
    out = render_skill(skill)
    assert out.count("<file>") == 10
    assert "SKILL.md</file>" not in out


def test_data_skills():
    plain = SkillDef("inline", "an inline skill", "Do the inline thing.")
    assert render_skill(plain) == (
        '<skill_content name="inline">\n# Skill: inline\n\nDo the inline thing.\n\n'
        "Base directory for this skill: skill://inline/\n"
        "Relative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.\n"
        "</skill_content>"
    )
    with_res = SkillDef("res", content="x", resources=["a.md", "b.md"])
    assert render_skill(with_res).endswith(
        "Note: file list is sampled.\n\n<skill_files>\n<file>a.md</file>\n<file>b.md</file>\n</skill_files>\n</skill_content>"
    )


async def test_unknown_skill_lists_the_available_ones():
    t = skill_tool([SkillDef("b", content="x"), SkillDef("a", content="y")])
    r = await t.execute({"name": "zzz"})
    assert r.is_error
    assert r.output == 'Skill "zzz" not found. Available skills: a, b'
    assert (await t.execute({})).is_error  # schema: name is required


def test_every_skip_reason(tmp_path: Path):
    write_skill(tmp_path / "1-good", "good", description="  first  ")
    write_skill(tmp_path / "2-dup", "good", description="second")
    write_skill(tmp_path / "3-noname", None, description="no name")
    (tmp_path / "4-nofm").mkdir()
    (tmp_path / "4-nofm" / "SKILL.md").write_text("just text\n")
    (tmp_path / "5-bad").mkdir()
    (tmp_path / "5-bad" / "SKILL.md").write_text("---\nname: [unclosed\n---\nbody\n")
    (tmp_path / "6-open").mkdir()
    (tmp_path / "6-open" / "SKILL.md").write_text("---\nname: open\nbody without a closing fence\n")
    (tmp_path / "7-list").mkdir()
    (tmp_path / "7-list" / "SKILL.md").write_text("---\n- a\n- b\n---\nbody\n")
    (tmp_path / "8-binary").mkdir()
    (tmp_path / "8-binary" / "SKILL.md").write_bytes(b"---\nname: \xff\xfe\n---\n")
    found = list_skills(tmp_path)
    assert [s.name for s in found.skills] == ["good"]
    assert found.skills[0].description == "first"
    reasons = {Path(s.path).parent.name: s.reason for s in found.skipped}
    assert reasons == {
        "2-dup": "duplicate-name",
        "3-noname": "missing-name",
        "4-nofm": "missing-name",
        "5-bad": "malformed-frontmatter",
        "6-open": "malformed-frontmatter",
        "7-list": "malformed-frontmatter",
        "8-binary": "unreadable",
    }


def test_scalars_are_trimmed_and_tags_take_two_forms(tmp_path: Path):
    write_skill(
        tmp_path / "a",
        "  spaced  ",
        description="  d  ",
        extra="tags: one, two ,three\nexamples: just one",
    )
    write_skill(tmp_path / "b", "listed", extra="tags:\n  - ' x '\n  - y")
    a, b = list_skills(tmp_path).skills
    assert (a.name, a.description, a.tags, a.examples) == (
        "spaced",
        "d",
        ["one", "two", "three"],
        ["just one"],
    )
    assert b.tags == ["x", "y"]


def test_symlinks_are_followed_and_cycles_guarded(tmp_path: Path):
    real = tmp_path / "real"
    write_skill(real / "inner", "inner")
    root = tmp_path / "root"
    root.mkdir()
    (root / "linked").symlink_to(real, target_is_directory=True)
    (real / "inner" / "loop").symlink_to(root, target_is_directory=True)  # a cycle back to the root
    (real / "self").symlink_to(real, target_is_directory=True)
    lone = tmp_path / "lone"
    lone.mkdir()
    write_skill(tmp_path / "elsewhere", "filelinked")
    (lone / "SKILL.md").symlink_to(tmp_path / "elsewhere" / "SKILL.md")
    (root / "lone").symlink_to(lone, target_is_directory=True)
    found = list_skills(root)
    assert sorted(s.name for s in found.skills) == ["filelinked", "inner"]
    assert found.skipped == []


def test_relative_roots_and_several_roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    write_skill(tmp_path / "one" / "a", "a")
    write_skill(tmp_path / "two" / "a", "a")
    write_skill(tmp_path / "two" / "b", "b")
    monkeypatch.chdir(tmp_path)
    found = list_skills(["one", Path("two"), "missing-folder"])
    assert [s.name for s in found.skills] == ["a", "b"]
    assert found.skills[0].path == tmp_path / "one" / "a" / "SKILL.md"
    assert [s.reason for s in found.skipped] == ["duplicate-name"]


def test_data_skill_after_files_and_nameless_data_skill(tmp_path: Path):
    write_skill(tmp_path / "a", "a")
    found = list_skills(
        tmp_path, [SkillDef("a", content="data"), SkillDef("", content="x"), SkillDef("c")]
    )
    assert [s.name for s in found.skills] == ["a", "c"]
    assert found.skills[0].path is not None
    assert sorted(s.reason for s in found.skipped) == ["duplicate-name", "missing-name"]


def test_skills_prompt():
    skills = [SkillDef("zeta", "last one"), SkillDef("alpha", "first one"), SkillDef("quiet")]
    assert skills_prompt(skills) == (
        "Skills provide specialized instructions and workflows for specific tasks.\n"
        "Use the skill tool to load a skill when a task matches its description.\n"
        "\n"
        "## Available Skills\n"
        "- **alpha**: first one\n"
        "- **zeta**: last one"
    )
    assert skills_prompt([SkillDef("quiet")]) == ""
    assert skills_prompt([]) == ""


async def test_a_folder_given_as_skills_data_is_a_clear_error(example_skills: Path):
    import toolnexus as tn
    from toolnexus.errors import ConfigError

    with pytest.raises(ConfigError, match=r"skills= takes SkillDef objects, not str .*skills_dir"):
        await tn.create_toolkit(skills=[str(example_skills)], builtins=False)
    tk = await tn.create_toolkit(str(example_skills), builtins=False)  # where a folder goes
    assert "weather" in {s.name for s in tk.skills()}
