"""Anchor for gpuvet diag's power test: a plain torch bf16 GEMM loop (what users time by hand).
   python3 torch_burn.py SECONDS N  -> TFLOP/s over the whole loop, one JSON line
The board's power is sampled beside it by nvidia-smi (scripts/device/diag.sh)."""
import json, sys, time
import torch

secs = float(sys.argv[1]) if len(sys.argv) > 1 else 60
n = int(sys.argv[2]) if len(sys.argv) > 2 else 8192
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
c = a @ b
torch.cuda.synchronize()
iters, t0 = 0, time.time()
while time.time() - t0 < secs:
    for _ in range(20):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    iters += 20
dt = time.time() - t0
print(json.dumps({"anchor": "torch_bf16_gemm_loop", "n": n, "seconds": dt, "iters": iters,
                  "tflops": 2 * n ** 3 * iters / dt / 1e12}))
