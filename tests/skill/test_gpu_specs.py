"""assets/gpu_specs.json is the one source of per-GPU numbers: the guides' tables match it,
every value names a source, measured values point at committed JSON, and the facts that
earlier CUDA skills got wrong stay right."""

from __future__ import annotations

import importlib.util
import json
import re
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import skilldocs

SCRIPT = skilldocs.SKILL / "scripts" / "gpu_specs.py"


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_specs_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


gpu_specs = _load_script()
SPECS = gpu_specs.load_specs()
# The guides' tables are written by repository tooling (not shipped), on top of gpu_specs.py.
GUIDES_SCRIPT = skilldocs.REPO / "benchmarks" / "gpu_guides.py"
_guides_spec = importlib.util.spec_from_file_location("gpu_guides_under_test", GUIDES_SCRIPT)
gpu_guides = importlib.util.module_from_spec(_guides_spec)
_guides_spec.loader.exec_module(gpu_guides)


# The check behind every measured row; not shipped: an agent never needs it.
def measured_json_value(specs: dict[str, Any], fact: dict[str, Any], skill_dir: Path = skilldocs.SKILL) -> Any:
    """The number a measured fact quotes, read from its JSON file at `json_key` (dotted path;
    list indices as integers) and divided by `json_divisor` when the file uses another unit."""
    source = specs["sources"][fact["source"]]
    data: Any = json.loads((skill_dir / source["file"]).read_text(encoding="utf-8"))
    for part in fact["json_key"].split("."):
        data = data[int(part)] if isinstance(data, list) else data[part]
    divisor = fact.get("json_divisor")
    return data / divisor if divisor else data


def _facts(specs: dict) -> list[tuple[str, dict]]:
    facts = []
    for key, entry in specs["gpus"].items():
        facts += [(f"gpus.{key}.{k}", v) for k, v in entry.items() if isinstance(v, dict)]
    for cc, limits in specs["compute_capabilities"].items():
        facts += [(f"compute_capabilities.{cc}.{k}", v) for k, v in limits.items() if isinstance(v, dict)]
    return facts


@pytest.mark.parametrize("key", sorted(SPECS["gpus"]))
def test_guide_table_matches_the_data_file(key: str) -> None:
    entry = SPECS["gpus"][key]
    guide = skilldocs.SKILL / entry["guide"]
    text = guide.read_text(encoding="utf-8")
    match = next((m for m in gpu_guides.TABLE_BLOCK.finditer(text) if m.group("key") == key), None)
    assert match is not None, f"{entry['guide']} has no <!-- gpu-specs:{key} --> table"
    assert match.group("body").strip() == gpu_guides.guide_tables(SPECS, text)[key], (
        f"{entry['guide']}: the {key} table differs from assets/gpu_specs.json; "
        "run `python benchmarks/gpu_guides.py`"
    )


def test_guides_embed_no_table_for_unknown_gpus() -> None:
    for guide in sorted((skilldocs.SKILL / "references").glob("*-optimization-guide.md")):
        for m in gpu_guides.TABLE_BLOCK.finditer(guide.read_text(encoding="utf-8")):
            assert m.group("key") in SPECS["gpus"], f"{guide.name}: unknown table key {m.group('key')}"


def test_every_value_names_a_known_source() -> None:
    for where, fact in _facts(SPECS):
        assert "value" in fact and "source" in fact, f"{where}: needs value and source"
        assert fact["source"] in SPECS["sources"], f"{where}: unknown source {fact['source']!r}"


def test_document_sources_have_urls_and_measured_sources_point_at_committed_json() -> None:
    for key, source in SPECS["sources"].items():
        assert source["kind"] in ("document", "measured", "none"), key
        if source["kind"] == "none":  # the marker of values no document was read for
            assert "url" not in source and "file" not in source, key
            continue
        if source["kind"] == "document":
            assert source["url"].startswith("https://"), key
            continue
        # A measured number must come from a JSON file, shipped inside the skill, that a script
        # in the skill wrote; both paths are relative to the skill folder.
        assert source["file"].endswith(".json"), f"source {key}: {source['file']} is not a JSON file"
        assert (skilldocs.SKILL / source["file"]).is_file(), f"source {key}: {source['file']} does not exist"
        assert (skilldocs.SKILL / source["script"]).is_file(), f"source {key}: {source['script']} does not exist"
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", source["date"]), f"source {key}: date {source['date']!r}"


def test_a_value_is_null_exactly_when_no_document_was_read_and_then_says_how_to_get_it() -> None:
    for where, fact in _facts(SPECS):
        unread = SPECS["sources"][fact["source"]]["kind"] == "none"
        assert (fact["value"] is None) == unread, f"{where}: null values, and only they, name a source of kind none"
        if unread:
            assert fact.get("note"), f"{where}: a missing value says how to get the number on the machine"
            assert gpu_specs._format_value(where.rsplit(".", 1)[1], fact) == f"not in this file yet: {fact['note']}"


def test_measured_values_equal_the_value_in_their_json() -> None:
    measured = 0
    for where, fact in _facts(SPECS):
        if SPECS["sources"][fact["source"]]["kind"] != "measured":
            continue
        measured += 1
        assert "json_key" in fact, f"{where}: a measured value names the key that holds it (json_key)"
        in_file = measured_json_value(SPECS, fact)
        assert in_file == fact["value"], f"{where}: {fact['value']} but its JSON holds {in_file} at {fact['json_key']}"
    assert measured, "the H200 entry carries the values measured on the project's H200"


def test_measured_json_was_written_on_the_gpu_it_describes() -> None:
    # A measured fact of gpus.KEY must come from a run on that GPU: the JSON names the device.
    for key, entry in SPECS["gpus"].items():
        for field, fact in entry.items():
            if not isinstance(fact, dict) or SPECS["sources"][fact["source"]]["kind"] != "measured":
                continue
            text = (skilldocs.SKILL / SPECS["sources"][fact["source"]]["file"]).read_text(encoding="utf-8")
            assert gpu_specs.match_device_name(SPECS, _device_name(json.loads(text))) == key, f"gpus.{key}.{field}"


def _device_name(data: object) -> str:
    """The first string value under a key named `device`/`name` that looks like a GPU name."""
    stack = [data]
    while stack:
        item = stack.pop(0)
        if isinstance(item, dict):
            for k, v in item.items():
                if k in ("device", "name") and isinstance(v, str) and "NVIDIA" in v:
                    return v
                stack.append(v)
        elif isinstance(item, list):
            stack.extend(item)
    return ""


def test_known_hardware_facts() -> None:
    cc = SPECS["compute_capabilities"]
    gpus = SPECS["gpus"]
    assert (cc["9.0"]["shared_memory_per_sm_kb"]["value"], cc["9.0"]["shared_memory_per_block_kb"]["value"]) == (228, 227)
    assert (cc["8.0"]["shared_memory_per_sm_kb"]["value"], cc["8.0"]["shared_memory_per_block_kb"]["value"]) == (164, 163)
    assert gpus["h100-sxm"]["l2_cache_mb"]["value"] == 50
    assert gpus["a100-sxm-80gb"]["l2_cache_mb"]["value"] == 40
    assert "no BF16" in gpus["t4"]["tensor_cores"]["value"]
    assert "bf16_tensor_tflops_dense" not in gpus["t4"]
    assert gpus["h200-sxm"]["memory_gb"]["value"] == 141
    assert gpus["h200-sxm"]["memory_bandwidth_gbs"]["value"] == 4800
    # Measured on the project's H200 (PyTorch device properties): not the H100's 50 MB L2.
    assert (gpus["h200-sxm"]["sm_count"]["value"], gpus["h200-sxm"]["l2_cache_mb"]["value"]) == (132, 60)
    for key, entry in gpus.items():
        assert (skilldocs.SKILL / entry["guide"]).is_file(), key


# NVIDIA CCCL arch_traits.h (commit 571f2fc), per compute capability: shared memory per SM and
# per block (KB), resident threads and blocks per SM.
CCCL_LIMITS = {"8.6": (100, 99, 1536, 16), "8.9": (100, 99, 1536, 24), "9.0": (228, 227, 2048, 32),
               "10.0": (228, 227, 2048, 32), "12.0": (100, 99, 1536, 24), "8.0": (164, 163, 2048, 32)}


@pytest.mark.parametrize("cc", sorted(CCCL_LIMITS))
def test_compute_capability_limits_match_cccl(cc: str) -> None:
    limits = SPECS["compute_capabilities"][cc]
    got = tuple(limits[k]["value"] for k in ("shared_memory_per_sm_kb", "shared_memory_per_block_kb",
                                             "max_resident_threads_per_sm", "max_resident_blocks_per_sm"))
    assert got == CCCL_LIMITS[cc]
    assert limits["max_resident_warps_per_sm"]["value"] * 32 == limits["max_resident_threads_per_sm"]["value"]
    assert (limits["registers_per_sm"]["value"], limits["max_registers_per_thread"]["value"]) == (65536, 255)


def test_rented_gpus_are_in_the_file_with_their_compute_capability() -> None:
    expected = {"b200": "10.0", "rtx-5090": "12.0", "rtx-pro-6000-blackwell": "12.0", "l4": "8.9", "l40s": "8.9",
                "a10g": "8.6"}
    for key, cc in expected.items():
        entry = SPECS["gpus"][key]
        assert entry["compute_capability"]["value"] == cc, key
        assert cc in SPECS["compute_capabilities"], f"{key}: no limits for compute capability {cc}"
    for key in ("b200", "rtx-5090", "rtx-pro-6000-blackwell"):
        assert SPECS["gpus"][key]["guide"] == "references/blackwell-guide.md"


def test_rented_gpus_memory_is_nvidias_figure_for_the_named_variant() -> None:
    # NVIDIA NIM documentation (sources nim-llm-gpus, nim-genmol-gpus): per-GPU memory. B200 is
    # the HGX/DGX part (180 GB), not the GB200 superchip's GPU (186 GB). No NVIDIA document read
    # so far gives L4's memory, nor any of these GPUs' bandwidth, SM count or L2.
    gpus = SPECS["gpus"]
    expected = {"b200": 180, "rtx-5090": 32, "rtx-pro-6000-blackwell": 96, "l40s": 48, "a10g": 24, "l4": None}
    assert {key: gpus[key]["memory_gb"]["value"] for key in expected} == expected
    for key in expected:
        for field in ("memory_bandwidth_gbs", "sm_count", "l2_cache_mb"):
            assert gpus[key][field]["value"] is None, f"{key}.{field}: name its NVIDIA document in this test"
    assert "186" in gpus["b200"]["memory_gb"]["note"] and "GB200" in gpus["b200"]["memory_gb"]["note"]


def test_blackwell_guide_says_it_was_read_not_measured() -> None:
    text = (skilldocs.SKILL / "references" / "blackwell-guide.md").read_text(encoding="utf-8")
    first_paragraph = text.split("\n\n")[1]
    assert first_paragraph.startswith("**Read from documentation and source code, not measured.**")


@pytest.mark.parametrize(
    ("device_name", "key"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H200", "h200-sxm"),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
        ("Tesla T4", "t4"),
        ("NVIDIA GeForce RTX 4090", None),
        ("NVIDIA B200", "b200"),
        ("NVIDIA GB200", None),
        ("NVIDIA GeForce RTX 5090", "rtx-5090"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000-blackwell"),
        ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "rtx-pro-6000-blackwell"),
        ("NVIDIA L4", "l4"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA L40", None),
        ("NVIDIA A10G", "a10g"),
        ("NVIDIA A10", None),
    ],
)
def test_device_names_map_to_entries(device_name: str, key: str | None) -> None:
    assert gpu_specs.match_device_name(SPECS, device_name) == key


def _run_without_torch(*args: str) -> subprocess.CompletedProcess[str]:
    code = ("import runpy, sys; sys.modules['torch'] = None; "
            f"sys.argv = [{str(SCRIPT)!r}, *{list(args)!r}]; runpy.run_path({str(SCRIPT)!r}, run_name='__main__')")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_script_works_without_torch() -> None:
    assert _run_without_torch("--help").returncode == 0
    listed = _run_without_torch("--list")
    assert listed.returncode == 0 and "h200-sxm" in listed.stdout
    table = _run_without_torch("--markdown", "t4")
    assert table.returncode == 0 and table.stdout.strip() == gpu_specs.markdown_table(SPECS, "t4")
    detect = _run_without_torch()
    assert detect.returncode == 1 and "torch is not installed" in detect.stderr
    unknown = _run_without_torch("--gpu", "nope")
    assert unknown.returncode == 2 and "unknown GPU" in unknown.stderr


def test_update_guides_is_idempotent(tmp_path: Path) -> None:
    # Rendering an already-rendered guide changes nothing.
    for guide in {entry["guide"] for entry in SPECS["gpus"].values()}:
        text = (skilldocs.SKILL / guide).read_text(encoding="utf-8")
        assert gpu_guides.render_guide(SPECS, text) == text, guide
    check = subprocess.run([sys.executable, str(GUIDES_SCRIPT), "--check"], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_reader_that_stops_early_ends_the_script_quietly() -> None:
    # `gpu_specs.py --list | head -1`: exit as a SIGPIPE'd tool (141), no traceback.
    for args in (["--list"], ["--gpu", "t4"]):
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            proc = subprocess.run([sys.executable, str(SCRIPT), *args], stdout=write_end, stderr=subprocess.PIPE,
                                  text=True, timeout=60)
        finally:
            os.close(write_end)
        assert proc.returncode == 141 and proc.stderr == "", proc.stderr


def test_blackwell_guides_comparison_table_matches_the_data_file() -> None:
    # The hand-written "Two Blackwells" table: each column is one compute capability.
    text = (skilldocs.SKILL / "references" / "blackwell-guide.md").read_text(encoding="utf-8")
    rows = [line for line in text.split("## Two Blackwells", 1)[1].split("##", 1)[0].splitlines()
            if line.startswith("| ") and not line.startswith("| Per SM")]
    columns = {"9.0": 1, "10.0": 2, "12.0": 3, "8.9": 4}
    fields = {"Shared memory": "shared_memory_per_sm_kb", "Shared memory per block (opt-in)": "shared_memory_per_block_kb",
              "Resident threads": "max_resident_threads_per_sm", "Resident blocks": "max_resident_blocks_per_sm",
              "32-bit registers": "registers_per_sm"}
    assert len(rows) == len(fields)
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        for cc, col in columns.items():
            fact = SPECS["compute_capabilities"][cc][fields[cells[0]]]
            assert cells[col] == gpu_specs._format_value(fields[cells[0]], fact), (cells[0], cc)
