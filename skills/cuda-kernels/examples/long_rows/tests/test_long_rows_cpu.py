"""The long-row kernels themselves, run on the CPU emulator against float64.

kernel_src/*.cu + tests/emu_entry.cpp are built with scripts/emulate_kernel.py into a
shared library (the skill's assets/emulator/cuda_emu.h stands in for the GPU) and called
through ctypes on torch CPU tensors: every path (one block per row, a thread-block cluster
per row with the DSMEM exchange, the two-pass fallback), both warp schedules (a missing
barrier shows in one of them), odd widths, misaligned row starts, -inf entries and rows.
Buffers carry guard elements: NaN around the inputs, a sentinel around the outputs.
"""

from __future__ import annotations

import ctypes
import importlib.util
import math
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

EXAMPLE = Path(__file__).resolve().parents[1]
SCRIPTS = EXAMPLE.parents[1] / "scripts"
KERNEL_SRC = EXAMPLE / "kernel_src"

spec = importlib.util.spec_from_file_location("long_rows_reference", EXAMPLE / "torch-ext" / "long_rows_kernels" / "reference.py")
assert spec and spec.loader
reference = importlib.util.module_from_spec(spec)
spec.loader.exec_module(reference)

pytestmark = pytest.mark.slow

DTYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
PATHS = {"auto": 0, "row": 1, "cluster": 2, "multipass": 3}
SENTINEL = 12345.0
GUARD = 8


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    spec = importlib.util.spec_from_file_location("emulate_kernel", SCRIPTS / "emulate_kernel.py")
    assert spec and spec.loader
    emulate_kernel = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(emulate_kernel)
    if emulate_kernel.compiler() is None or emulate_kernel.cuda_include() is None:
        pytest.skip("needs g++ and the CUDA headers")
    out = tmp_path_factory.mktemp("emu") / "liblong_rows_emu.so"
    proc = emulate_kernel.build(sorted(KERNEL_SRC.glob("*.cu")) + [EXAMPLE / "tests" / "emu_entry.cpp"], out, shared=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    os.environ["CUDA_EMU_QUIET"] = "1"
    lib = ctypes.CDLL(str(out))
    lib.lr_logsumexp.restype = ctypes.c_int
    lib.lr_logsumexp.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                 ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int,
                                 ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
    lib.lr_failure.restype = ctypes.c_char_p
    return lib


def guarded(n: int, fill: float, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """(buffer with GUARD elements each side filled with `fill`, view of its middle n)."""
    buf = torch.full((n + 2 * GUARD,), fill, dtype=dtype)
    return buf, buf[GUARD : GUARD + n]


def run(lib: ctypes.CDLL, x: torch.Tensor, target: torch.Tensor | None, *, path: str, schedule: int,
        cluster: int = 0, sms: int = 132, max_clusters: int = -1, ignore_index: int = -100) -> tuple:
    rows, vocab = x.shape
    lse_buf, lse = guarded(rows, SENTINEL, torch.float32)
    loss_buf, loss = guarded(rows, SENTINEL, torch.float32)
    taken = ctypes.c_int(-1)
    err = lib.lr_logsumexp(DTYPES[x.dtype], x.data_ptr(), x.stride(0), rows, vocab, lse.data_ptr(),
                           target.data_ptr() if target is not None else None,
                           loss.data_ptr() if target is not None else None, ignore_index, PATHS[path], cluster,
                           schedule, sms, max_clusters, ctypes.byref(taken))
    assert err == 0, f"launch failed ({err}): {lib.lr_failure().decode()}"
    for buf in (lse_buf, loss_buf):
        assert (buf[:GUARD] == SENTINEL).all() and (buf[-GUARD:] == SENTINEL).all(), "wrote outside the output"
    if target is None:
        assert (loss == SENTINEL).all()
    return lse, loss, taken.value


def make_logits(rows: int, vocab: int, dtype: torch.dtype, *, offset: int = 0, seed: int = 0) -> torch.Tensor:
    """[rows, vocab] logits whose rows start `offset` elements into a NaN-guarded buffer row
    (row stride vocab + offset + 3: odd, so rows start at every alignment)."""
    g = torch.Generator().manual_seed(seed)
    stride = vocab + offset + 3
    _, body = guarded(rows * stride, float("nan"), dtype)
    view = body.view(rows, stride)[:, offset : offset + vocab]
    view.copy_((torch.randn(rows, vocab, generator=g) * 4 + 2).to(dtype))
    return view


def check(lse: torch.Tensor, x: torch.Tensor, loss: torch.Tensor | None = None, target: torch.Tensor | None = None,
          ignore_index: int = -100) -> None:
    ref = reference.logsumexp(x.double())
    torch.testing.assert_close(lse.double(), ref, rtol=2e-6, atol=2e-6, equal_nan=True)
    if loss is not None:
        ref_loss = reference.cross_entropy(x.double(), target, ignore_index)
        torch.testing.assert_close(loss.double(), ref_loss, rtol=2e-6, atol=2e-5, equal_nan=True)


@pytest.mark.parametrize("schedule", [0, 1], ids=["forward", "reverse"])
@pytest.mark.parametrize("path", ["row", "cluster", "multipass"])
@pytest.mark.parametrize("dtype", list(DTYPES), ids=lambda d: str(d).split(".")[-1])
def test_every_path_matches_float64(lib, path: str, dtype: torch.dtype, schedule: int) -> None:
    for rows, vocab, offset in [(3, 1, 0), (2, 37, 1), (3, 1000, 0), (2, 4100, 5), (1, 9001, 3)]:
        x = make_logits(rows, vocab, dtype, offset=offset, seed=vocab)
        target = torch.randint(0, vocab, (rows,), generator=torch.Generator().manual_seed(1))
        target[0] = -100
        lse, loss, taken = run(lib, x, target, path=path, schedule=schedule, cluster=4 if path == "cluster" else 0)
        assert taken == PATHS[path]
        check(lse, x, loss, target)


def test_auto_takes_the_cluster_path_for_few_wide_rows_and_falls_back(lib) -> None:
    x = make_logits(2, 3 * 4096 + 5, torch.bfloat16)
    lse, _, taken = run(lib, x, None, path="auto", schedule=0, sms=8)
    assert taken == PATHS["cluster"]
    check(lse, x)
    lse, _, taken = run(lib, x, None, path="auto", schedule=1, sms=8, max_clusters=0)
    assert taken == PATHS["multipass"], "no cluster can be scheduled: the two-pass fallback"
    check(lse, x)
    lse, _, taken = run(lib, make_logits(9, 5000, torch.float32), None, path="auto", schedule=0, sms=8)
    assert taken == PATHS["row"], "rows >= SMs: one block per row"


@pytest.mark.parametrize("path", ["row", "cluster", "multipass"])
def test_minus_inf_entries_and_rows(lib, path: str) -> None:
    x = make_logits(4, 3000, torch.bfloat16, offset=1)
    x[0] = float("-inf")                 # all -inf: lse -inf, loss NaN (as PyTorch)
    x[1, ::2] = float("-inf")            # half of the row
    x[2, :2999] = float("-inf")          # one finite entry, at the very end (the tail)
    x[3, 5] = float("inf")               # +inf entry: lse +inf
    target = torch.tensor([3, 0, 2999, 5])  # x[1, 0] is -inf: loss +inf
    lse, loss, _ = run(lib, x, target, path=path, schedule=1, cluster=8 if path == "cluster" else 0)
    assert lse[0] == -math.inf and math.isnan(loss[0])
    assert lse[3] == math.inf
    assert loss[1] == math.inf
    check(lse[:3], x[:3], loss[:3], target[:3])


def test_target_outside_the_vocabulary_gives_nan(lib) -> None:
    x = make_logits(3, 100, torch.float32)
    _, loss, _ = run(lib, x, torch.tensor([-1, 100, 7]), path="row", schedule=0)
    assert math.isnan(loss[0]) and math.isnan(loss[1]) and not math.isnan(loss[2])
