"""The long-row kernels on a GPU against float64: widths {1000, 32000, 50257, 151936}
(Qwen3's vocabulary last) x rows {1, 7, 4096} x fp32/fp16/bf16, every path forced,
misaligned views (x[:, 1:]), -inf rows, ignore_index, torch.compile through the fake."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

WIDTHS = [1000, 32000, 50257, 151936]
ROWS = [1, 7, 4096]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def _logits(rows: int, vocab: int, dtype: torch.dtype, *, misaligned: bool = False, seed: int = 0) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(seed)
    width = vocab + 1 if misaligned else vocab
    x = (torch.randn(rows, width, device="cuda", generator=g) * 3).to(dtype)
    return x[:, 1:] if misaligned else x


def _check(kernels, x: torch.Tensor, path: str = "auto", ignore_index: int = -100) -> None:
    rows, vocab = x.shape
    target = torch.randint(0, vocab, (rows,), device="cuda")
    target[::3] = ignore_index
    loss, lse = kernels.cross_entropy(x, target, ignore_index, path=path)
    ref_lse = kernels.reference.logsumexp(x.double())
    ref_loss = kernels.reference.cross_entropy(x.double(), target, ignore_index)
    torch.testing.assert_close(lse.double(), ref_lse, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(loss.double(), ref_loss, rtol=1e-5, atol=5e-5)
    torch.testing.assert_close(kernels.logsumexp(x, path=path), lse, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).split(".")[-1])
@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("vocab", WIDTHS)
def test_auto_matches_float64(kernels, vocab: int, rows: int, dtype: torch.dtype) -> None:
    _check(kernels, _logits(rows, vocab, dtype, seed=vocab + rows))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).split(".")[-1])
@pytest.mark.parametrize("path", ["row", "cluster", "multipass"])
@pytest.mark.parametrize("vocab", WIDTHS)
def test_every_path_on_misaligned_views(kernels, vocab: int, path: str, dtype: torch.dtype) -> None:
    for rows in (1, 7):
        _check(kernels, _logits(rows, vocab, dtype, misaligned=True, seed=rows), path=path)
    _check(kernels, _logits(3, vocab, dtype, seed=3), path=path)


@pytest.mark.parametrize("path", ["row", "cluster", "multipass"])
def test_minus_inf_rows_and_entries(kernels, path: str) -> None:
    x = _logits(4, 151936, torch.bfloat16)
    x[0] = float("-inf")
    x[1, ::2] = float("-inf")
    x[2, :-1] = float("-inf")
    target = torch.tensor([5, 1, 151935, 7], device="cuda")
    loss, lse = kernels.cross_entropy(x, target, path=path)
    assert lse[0].item() == -math.inf and math.isnan(loss[0].item())
    torch.testing.assert_close(lse[1:].double(), kernels.reference.logsumexp(x[1:].double()), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(loss[1:].double(), kernels.reference.cross_entropy(x[1:].double(), target[1:]),
                               rtol=1e-5, atol=5e-5)


def test_leading_dims_zero_rows_and_compile(kernels) -> None:
    x = _logits(2 * 3 * 5, 32000, torch.bfloat16).view(2, 3, 5, 32000)
    torch.testing.assert_close(kernels.logsumexp(x).double(), kernels.reference.logsumexp(x.double()),
                               rtol=1e-5, atol=1e-5)
    assert kernels.logsumexp(x[:, :0]).shape == (2, 0, 5)
    compiled = torch.compile(lambda t: kernels.logsumexp(t) * 2, fullgraph=True)
    torch.testing.assert_close(compiled(x), kernels.logsumexp(x) * 2)
