"""Anchor for gpuvet diag's memory test: a torch fill-and-compare over most of the free memory
(the quickest memory check users write by hand).
   python3 torch_memfill.py FRACTION  -> write+read TB/s of one fill and one compare, JSON"""
import json, sys, time
import torch

frac = float(sys.argv[1]) if len(sys.argv) > 1 else 0.9
free, total = torch.cuda.mem_get_info()
n = int(free * frac) // 8
x = torch.empty(n, dtype=torch.int64, device="cuda")
torch.cuda.synchronize()
best = None
for pattern in (0x5555555555555555, -0x5555555555555556):
    t0 = time.time()
    x.fill_(pattern)
    # the compare in 1 GiB views: a whole-buffer == would need a bool tensor of an eighth of it
    step = (1 << 30) // 8
    ok = all(bool((x[i:i + step] == pattern).all().item()) for i in range(0, n, step))
    torch.cuda.synchronize()
    dt = time.time() - t0
    tbps = 2 * n * 8 / dt / 1e12
    best = tbps if best is None or tbps > best else best
print(json.dumps({"anchor": "torch_fill_compare", "gib": n * 8 / 2 ** 30, "ok": ok, "tbps_best": best}))
