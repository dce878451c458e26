"""Run one scaffold op a few times at one shape, for ncu to profile (launch-skip 3)."""
import sys
import torch

op, rows, width, offset = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
x = torch.randn(rows * width + offset, device="cuda", dtype=torch.bfloat16)[offset:].view(rows, width)
if op == "layernorm_triton":
    sys.path.insert(0, sys.argv[5])  # the project's benchmarks/ (triton_peer.py)
    from triton_peer import layer_norm as tln
    sc = 0.3 * torch.randn(4, width, device="cuda", dtype=torch.bfloat16)
    sh = 0.3 * torch.randn(4, width, device="cuda", dtype=torch.bfloat16)
    fn = lambda: tln(x, None, None, 1e-6, sc, sh)
elif op == "layernorm":
    import sg_layernorm as m
    sc = 0.3 * torch.randn(4, width, device="cuda", dtype=torch.bfloat16)
    sh = 0.3 * torch.randn(4, width, device="cuda", dtype=torch.bfloat16)
    fn = lambda: m.layer_norm(x, None, None, 1e-6, sc, sh)
else:
    import sg_rmsnorm as m
    w = torch.randn(width, device="cuda", dtype=torch.bfloat16)
    fn = lambda: m.rms_norm(x, w, 1e-6)
for _ in range(5):
    fn()
torch.cuda.synchronize()
print("ok", op, rows, width, offset)
