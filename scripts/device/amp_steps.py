# The GPU half of anchors/bench_models.py, timed the same way (3 warm-up steps, 10 steps each
# timed alone with a synchronize, median), to see how much that anchor moves from one process to
# the next and whether an NVML sampler running beside it slows it (scripts/device/noise.sh).
# Prints one JSON object.
import json, statistics, sys, time
import torch, torchvision


def step_fn(model, x, y, amp, opt):
    def f():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=amp):
            out = model(x) if not isinstance(x, dict) else model(**x).logits
            loss = torch.nn.functional.cross_entropy(out, y)
        loss.backward()
        opt.step()
    return f


def timeit(f, iters=10, warm=3):
    for _ in range(warm):
        f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        s = time.perf_counter()
        f()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - s) * 1000)
    return statistics.median(ts), min(ts), max(ts)


torch.backends.cudnn.benchmark = True
R = {}
dev = torch.device("cuda")
m = torchvision.models.resnet50().to(dev).to(memory_format=torch.channels_last)
x = torch.randn(64, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
y = torch.randint(0, 1000, (64,), device=dev)
opt = torch.optim.SGD(m.parameters(), lr=0.01)
R["resnet50_fp32"] = timeit(step_fn(m, x, y, False, opt))
R["resnet50_amp"] = timeit(step_fn(m, x, y, True, opt))
del m, x, y, opt
from transformers import BertConfig, BertForSequenceClassification
m = BertForSequenceClassification(BertConfig()).to(dev)
ids = torch.randint(0, 30000, (32, 128), device=dev)
y = torch.randint(0, 2, (32,), device=dev)
opt = torch.optim.AdamW(m.parameters(), lr=1e-5)
R["bert_fp32"] = timeit(step_fn(m, {"input_ids": ids}, y, False, opt))
R["bert_amp"] = timeit(step_fn(m, {"input_ids": ids}, y, True, opt))
print(json.dumps(R))
