"""gpu_clocks.ClockLog: the SM clock and power a measurement ran at, from nvidia-smi samples.

A fake nvidia-smi on PATH stands in for the real one, so this runs on CPU machines.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import time
from pathlib import Path

import pytest

INTEGRATION = Path(__file__).resolve().parents[2] / "skills" / "cuda-kernels" / "examples" / "qwen3_8b" / "integration"
sys.path.insert(0, str(INTEGRATION))

import gpu_clocks  # noqa: E402

FAKE_SMI = """#!/usr/bin/env python3
import datetime, sys, time
args = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
assert args["--format"] == "csv,noheader,nounits", args
period = int(args["--loop-ms"]) / 1000
while True:
    now = datetime.datetime.now().strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
    print(f"{now}, 1530, 690.25, 63, 0x0000000000000004", flush=True)
    time.sleep(period)
"""


@pytest.fixture
def fake_smi(tmp_path, monkeypatch):
    exe = tmp_path / "nvidia-smi"
    exe.write_text(FAKE_SMI.replace("#!/usr/bin/env python3", f"#!{sys.executable}", 1))
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    return exe


def test_samples_taken_during_the_body_are_summarized(fake_smi):
    with gpu_clocks.ClockLog(interval_ms=10) as clocks:
        time.sleep(0.3)
    summary = clocks.summary()
    assert summary is not None and summary["samples"] >= 5
    assert summary["sm_mhz"] == 1530 and summary["power_w"] == pytest.approx(690.25, abs=0.05)
    assert summary["power_capped"] == 1.0
    assert summary["clock_event_reasons"] == {"sw_power_cap": 1.0}
    assert summary["temperature_c_max"] == 63


def test_without_nvidia_smi_there_is_no_summary(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no nvidia-smi
    with gpu_clocks.ClockLog() as clocks:
        pass
    assert clocks.summary() is None


def test_lines_nvidia_smi_cannot_fill_are_skipped():
    assert gpu_clocks.parse_line("2026/12/04 16:45:01.123, [N/A], 690.25, 63, 0x4") is None
    assert gpu_clocks.parse_line("2026/12/04 16:45:01.1") is None  # cut off mid-write
    stamp, mhz, watts, temp, reasons = gpu_clocks.parse_line("2026/12/04 16:45:01.123, 1980, 126.5, 44, 0x0000000000000001")
    assert stamp == dt.datetime(2026, 12, 4, 16, 45, 1, 123000)
    assert (mhz, watts, temp, reasons) == (1980.0, 126.5, 44.0, 1)


def test_reasons_are_shares_of_the_samples():
    t = dt.datetime(2026, 1, 1)
    samples = [(t, 1980.0, 300.0, 50.0, 0x0), (t, 1700.0, 699.0, 60.0, 0x4), (t, 1500.0, 700.0, 62.0, 0x4 | 0x20),
               (t, 1600.0, 698.0, 61.0, 0x4)]
    summary = gpu_clocks.summarize(samples)
    assert summary["sm_mhz"] == 1650 and summary["sm_mhz_min"] == 1500
    assert summary["power_capped"] == 0.75
    assert summary["clock_event_reasons"] == {"sw_power_cap": 0.75, "sw_thermal_slowdown": 0.25}
    assert gpu_clocks.summarize([]) is None
