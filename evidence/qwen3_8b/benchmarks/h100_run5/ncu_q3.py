# Two calls each of the qwen3 RMSNorm at 4096x4096 (row kernel) and 4096x4100 (split kernel), for ncu.
import sys, torch
sys.path.insert(0, sys.argv[1])
import qwen3_8b_kernels as q
for h in (4096, 4100):
    x = torch.randn(4096, h, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(h, device="cuda", dtype=torch.bfloat16)
    for _ in range(2):
        q.rms_norm(x, w, 1e-6)
torch.cuda.synchronize()
