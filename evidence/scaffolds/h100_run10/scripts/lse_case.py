"""logsumexp over rows x vocab bf16 logits, a few calls, for ncu (launch-skip 3)."""
import sys
import torch
import long_rows_kernels as K

rows, vocab, dtype = int(sys.argv[1]), int(sys.argv[2]), getattr(torch, sys.argv[3])
x = torch.randn(rows, vocab, device="cuda", dtype=dtype)
for _ in range(5):
    K.logsumexp(x)
torch.cuda.synchronize()
print("ok", rows, vocab, dtype)
