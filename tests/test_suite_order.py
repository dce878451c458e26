"""tests/conftest.py's order under `pytest -n auto --dist loadfile`: the files that compile CUDA
go out to the workers first, a file that reuses another file's build after the other slow files."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

CONFTEST = Path(__file__).resolve().parent / "conftest.py"


def load_conftest():
    spec = importlib.util.spec_from_file_location("suite_conftest", CONFTEST)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class FakeItem:
    path: Path
    fixturenames: tuple[str, ...] = ()
    marks: set[str] = field(default_factory=set)

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.marks else None


def test_build_users_go_first_and_reusers_after_the_other_slow_files() -> None:
    tiers = load_conftest().xdist_tiers
    cli, names, ltx_build, ltx_use, qwen_build, qwen_use, scaffolds = (
        Path(p) for p in ("cli.py", "names.py", "ltx_build.py", "ltx_use.py", "qwen_build.py", "qwen_use.py", "gen.py"))
    items = [
        FakeItem(cli), FakeItem(cli),
        FakeItem(names, marks={"slow"}),
        FakeItem(ltx_build, ("ltx_build", "tmp_path"), {"slow"}), FakeItem(ltx_build),
        FakeItem(ltx_use), FakeItem(ltx_use, ("ltx_kernels",), {"slow"}),  # the same build as ltx_build
        FakeItem(qwen_build, ("qwen3_kernels",)), FakeItem(qwen_use, ("qwen3_kernels",)),
        FakeItem(scaffolds, ("kernel_project_root",), {"slow"}),
    ]
    assert tiers(items) == {cli: 3, names: 1, ltx_build: 0, ltx_use: 2, qwen_build: 0, qwen_use: 2, scaffolds: 0}
    order = sorted(items, key=lambda item: tiers(items)[item.path])
    assert [i.path for i in order][:4] == [ltx_build, ltx_build, qwen_build, scaffolds]
    assert [i.path for i in order][-2:] == [cli, cli]


def run_wrapper(hook, proposed: int) -> int:
    gen = hook(None)
    next(gen)
    try:
        gen.send(proposed)
    except StopIteration as done:
        return done.value
    raise AssertionError("the wrapper did not return")


def test_auto_workers_are_one_per_core_up_to_eight_unless_the_environment_says(monkeypatch) -> None:
    conftest = load_conftest()
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    assert run_wrapper(conftest.pytest_xdist_auto_num_workers, 2) == 2
    assert run_wrapper(conftest.pytest_xdist_auto_num_workers, 64) == conftest.MAX_AUTO_WORKERS == 8
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "32")  # xdist read it and proposes 32
    assert run_wrapper(conftest.pytest_xdist_auto_num_workers, 32) == 32
