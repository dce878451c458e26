"""SKILL.md front matter in YAML's plain subset is read without PyYAML, as PyYAML reads it.

`kernels skills add` reads the front matter of every skill it installs; importing PyYAML
costs about a tenth of the command's time, so the common shapes (top-level strings, folded
or literal block strings, one nested mapping of strings) are parsed directly, and anything
else goes to PyYAML. The direct parse must never disagree with PyYAML's safe loader.
"""

from __future__ import annotations

import random

import pytest
import yaml

from kernel_skills.skill import _simple_front_matter, parse_front_matter, split_front_matter

from .conftest import REPO

SCALARS = [
    "cuda-kernels", "Write CUDA kernels", "yes", "No", "ON", "off", "null", "Null", "true", "y", "n", "~", "1.0", "0x1F",
    "2026-12-05", "1e3", ".inf", "-a", "- a", "[x]", "a]b", "{a}", "a, b", "It's", "'it''s'", "'a'b'", '"quoted"', '"a\\tb"',
    '"a"b"', "a: b", "a:b", "x:", "a #b", "a#b", "#c", "&anchor", "*ref", "!tag x", "|", ">", "%x", "@x", "`x`", "é", "a\u00e9",
    "trailing ", "=", "<<", "MIT", "Apache-2.0", "v1.2", "1.2.3", "?x", "a ? b",
]
LINES = ["word", "two words", "", "x: y", "  more", "a #b", "- item", "ends with space ", "é", "'q'", "yes", "1.0"]


def _random_front_matter(rng: random.Random) -> str:
    out: list[str] = []
    for key in rng.sample(["name", "description", "license", "metadata", "allowed-tools", "compatibility", "k_1"], rng.randint(1, 5)):
        kind = rng.random()
        if kind < 0.4:
            out.append(f"{key}: {rng.choice(SCALARS)}")
        elif kind < 0.75:
            indent = " " * rng.choice([1, 2, 4])
            out.append(f"{key}: {rng.choice(['>', '>-', '|', '|-', '>+', '|2'])}")
            out += [(indent + rng.choice(LINES)) if rng.random() > 0.2 else "" for _ in range(rng.randint(0, 5))]
        else:
            out.append(f"{key}:")
            indent = " " * rng.choice([2, 4])
            out += [f"{indent if rng.random() > 0.1 else ' '}{k}: {rng.choice(SCALARS)}" for k in rng.sample(["version", "author", "a"], rng.randint(0, 3))]
        if rng.random() < 0.2:
            out.append("")
    return "\n".join(out)


def test_the_direct_parse_agrees_with_pyyaml_or_declines() -> None:
    rng = random.Random(31)
    parsed = 0
    for _ in range(20000):
        raw = _random_front_matter(rng)
        fast = _simple_front_matter(raw)
        if fast is None:
            continue
        parsed += 1
        assert fast == yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)), raw
    assert parsed > 1000, "the generator should reach the direct parse often"


@pytest.mark.parametrize("path", sorted((REPO / "skills").glob("*/SKILL.md")), ids=lambda p: p.parent.name)
def test_the_bundled_skills_take_the_direct_parse(path) -> None:
    raw, _ = split_front_matter(path.read_text(encoding="utf-8"))
    fast = _simple_front_matter(raw)
    assert fast is not None and fast == yaml.safe_load(raw)
    assert parse_front_matter(path.read_text(encoding="utf-8")) == fast


def test_what_the_direct_parse_declines_still_gets_pyyamls_answer_and_errors() -> None:
    assert parse_front_matter("---\nname: demo\nversion: 1.0\n---\n") == {"name": "demo", "version": 1.0}
    assert parse_front_matter("---\nname: demo\ntags: [a, b]\n---\n") == {"name": "demo", "tags": ["a", "b"]}
    with pytest.raises(ValueError, match="not valid YAML"):
        parse_front_matter("---\nname: [demo\n---\n")
