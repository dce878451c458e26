"""Issue 29, break 8: messages and exit codes a careful user would expect."""

from __future__ import annotations

import errno
import json
import os
import time

import pytest

from .conftest import cli, run_module


def test_hub_down_and_a_skill_of_a_cached_repo_never_downloaded_fails_fast(sandbox, hub):
    from .hubfake import skill_files

    hub.commit("my-org/skills", {**skill_files("house-style"), **skill_files("other")})
    assert cli("skills", "add", "hf://my-org/skills/house-style", "--dest", "a", "-q").exit_code == 0
    hub.stop()
    start = time.monotonic()
    result = cli("skills", "add", "hf://my-org/skills/other", "--dest", "b")
    took = time.monotonic() - start
    assert result.exit_code == 1
    assert "cannot reach the Hub" in result.stderr and "not in the local cache" in result.stderr
    assert result.stderr.count("\n") == 1 and "Retry" not in result.stderr
    assert took < 5, f"{took:.1f} s: retried instead of failing"
    # What the cache holds still installs with the Hub down.
    assert cli("skills", "add", "hf://my-org/skills/house-style", "--dest", "c", "-q").exit_code == 0
