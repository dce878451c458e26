"""What the GPU's clock and power were while a measurement ran, sampled with nvidia-smi.

    with ClockLog() as clocks:
        ...                          # the timed loop
    entry["gpu"] = clocks.summary()  # {"sm_mhz": 1530, "power_w": 691, "power_capped": 1.0, ...}

Why: an H200 forward that keeps the tensor cores busy draws the board's 700 W limit, and
the driver then lowers the SM clock (clock event reason "SW power cap"). Two variants of
one model can run the same matmuls at different clocks, so a time without the clock it
ran at can send you looking for a kernel problem that is a power problem.

nvidia-smi runs as a subprocess every `interval_ms`; samples whose timestamp falls between
__enter__ and __exit__ are kept. Without nvidia-smi (CPU machines, CI) summary() is None.
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from typing import Any

QUERY = "timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active"
# Bits of clocks_event_reasons.active (nvidia-smi -q documents each reason).
REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
}
_TIME_FORMAT = "%Y/%m/%d %H:%M:%S.%f"


def parse_line(line: str) -> tuple[_dt.datetime, float, float, float, int] | None:
    """One `--format=csv,noheader,nounits` line -> (local time, MHz, W, degrees C, reason bits)."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != 5:
        return None
    try:
        return (
            _dt.datetime.strptime(parts[0], _TIME_FORMAT),
            float(parts[1]),
            float(parts[2]),
            float(parts[3]),
            int(parts[4], 16),
        )
    except ValueError:  # "[N/A]" fields, a partly written last line
        return None


def summarize(samples: list[tuple[_dt.datetime, float, float, float, int]]) -> dict[str, Any] | None:
    if not samples:
        return None
    reasons: dict[str, float] = {}
    for bit, name in REASONS.items():
        share = sum(1 for s in samples if s[4] & bit) / len(samples)
        if share:
            reasons[name] = round(share, 2)
    return {
        "samples": len(samples),
        "sm_mhz": statistics.median(s[1] for s in samples),
        "sm_mhz_min": min(s[1] for s in samples),
        "power_w": round(statistics.median(s[2] for s in samples), 1),
        "temperature_c_max": max(s[3] for s in samples),
        "power_capped": reasons.get("sw_power_cap", 0.0),
        "clock_event_reasons": reasons,
    }


class ClockLog:
    """Context manager: nvidia-smi samples of one GPU over the body of a `with`."""

    def __init__(self, device_index: int = 0, interval_ms: int = 20) -> None:
        self.device_index = device_index
        self.interval_ms = interval_ms
        self._proc: subprocess.Popen[str] | None = None
        self._path: str | None = None
        self._window: list[_dt.datetime] = []
        self._samples: list[tuple[_dt.datetime, float, float, float, int]] = []

    def __enter__(self) -> ClockLog:
        exe = shutil.which("nvidia-smi")
        if exe is None:
            return self
        fd, self._path = tempfile.mkstemp(prefix="clocklog-", suffix=".csv")
        os.close(fd)
        cmd = [exe, f"--id={self.device_index}", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits",
               f"--loop-ms={self.interval_ms}"]
        # Append mode: nvidia-smi writes at the end whatever this process reads.
        with open(self._path, "a") as sink:
            self._proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.DEVNULL, text=True)
        # nvidia-smi takes ~0.1-0.5 s to print its first sample; start the clock after it.
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and self._proc.poll() is None:
            with open(self._path) as log:
                if log.readline().endswith("\n"):
                    break
            time.sleep(0.01)
        self._window = [_dt.datetime.now()]
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._proc is None:
            return
        self._window.append(_dt.datetime.now())
        time.sleep(2 * self.interval_ms / 1000)  # let the sample covering the end arrive
        self._proc.terminate()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
        start, end = self._window
        with open(self._path) as log:
            for line in log:
                sample = parse_line(line)
                if sample is not None and start <= sample[0] <= end:
                    self._samples.append(sample)
        os.unlink(self._path)

    def summary(self) -> dict[str, Any] | None:
        return summarize(self._samples)
