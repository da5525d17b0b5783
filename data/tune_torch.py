#!/usr/bin/env python3
# gpuvet tune probe: times real PyTorch training steps (forward, backward, optimizer step) under
# the settings that decide training speed, and answers in one JSON document on stdout.
#
# gpuvet embeds this file (data/tune_torch.py), writes it to a private temporary directory and
# runs it with the selected interpreter: `python3 tune_torch.py --budget 300 ...`. It can also be
# run by hand. Nothing is downloaded: random weights, synthetic data.
#
# Protocol on stderr, one line each (everything else there is free text: warnings, tracebacks):
#   PROGRESS i/n label     a step of the plan starts
#   MARK begin|end ID      the timed part of record ID starts or ends (gpuvet samples GPU
#                          utilization through NVML in between)
#   RESULT {json}          a finished record, the same object as in the final document, so that
#                          a run killed before the end still tells what it measured
# stdout: one JSON document, schema "gpuvet.tune-probe/1" (docs/tune.md describes it).
#
# The timing method is the one of anchors/bench_models.py, so that figures compare: the median
# of synchronized iterations timed with time.perf_counter() after warm-up (GPU: 3 warm-up, 10
# timed; CPU: 1 and 2), a step being zero_grad(set_to_none=True), forward under autocast,
# cross-entropy, backward, optimizer step; peak memory is max_memory_allocated() over one step
# after reset_peak_memory_stats().
#
# torch is imported only inside the functions that need it, so that this module imports (and
# its unit tests run) under a plain python3 without torch.

import argparse
import json
import math
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

SCHEMA = "gpuvet.tune-probe/1"
MODELS = ("resnet50", "bert", "mlp")
DEFAULT_BATCH = {"resnet50": 64, "bert": 32, "mlp": 256}
CNN_MODELS = ("resnet50",)
# GPU settings, in the order they run. The first four are the precision choices, each measured
# against fp32; channels_last and cudnn_benchmark are measured on top of the best of those (they
# help only with tensor cores); ref_* are the settings of anchors/bench_models.py and of the
# knowledge base's expected figures; compile runs on request only.
PRECISION_SETTINGS = ("fp32", "tf32", "amp_fp16", "amp_bf16")
CNN_SETTINGS = ("channels_last", "cudnn_benchmark")
REF_SETTINGS = ("ref_fp32", "ref_amp_fp16")
ALL_SETTINGS = PRECISION_SETTINGS + CNN_SETTINGS + REF_SETTINGS + ("compile",)
GPU_WARMUP, GPU_ITERS = 3, 10
CPU_WARMUP, CPU_ITERS = 1, 2
DEFAULT_WORKERS = (0, 2, 4, 8)
PIPELINE_WARMUP_BATCHES = 3
PIPELINE_MAX_BATCHES = 30
PIPELINE_WINDOW_S = 3.0
DDP_MIN_SECONDS = 40.0  # starting the processes and NCCL takes ~10-20 s before the first step
RESERVE_S = 1.0  # kept at the end of the budget to write the document
MLP_SHAPE = (1024, 2048, 2048, 10)


class BudgetExceeded(Exception):
    """The time budget ran out (raised by the SIGALRM handler, or by a check)."""


class Interrupted(Exception):
    """SIGTERM or SIGINT: stop and report what finished."""


# ---------------------------------------------------------------------------------------------
# Output protocol


def finite(v):
    """JSON has no NaN or Infinity: non-finite floats become null, recursively."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [finite(x) for x in v]
    return v


def dumps(obj, **kw):
    return json.dumps(finite(obj), allow_nan=False, **kw)


class Channel:
    """The stderr protocol. `stream` is sys.stderr unless a test gives another."""

    def __init__(self, stream=None):
        self.stream = stream

    def _line(self, text):
        s = self.stream if self.stream is not None else sys.stderr
        # one line, whatever the label holds
        s.write(text.replace("\n", " ").replace("\r", " ") + "\n")
        s.flush()

    def progress(self, i, n, label):
        self._line("PROGRESS %d/%d %s" % (i, n, label))

    def mark(self, what, rec_id):
        self._line("MARK %s %d" % (what, rec_id))

    def result(self, rec):
        self._line("RESULT " + dumps(rec))


# ---------------------------------------------------------------------------------------------
# Arguments


def positive_int(s):
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a whole number, got %r" % s)
    if v < 1 or v > 1 << 20:
        raise argparse.ArgumentTypeError("expected a whole number from 1 to %d, got %r" % (1 << 20, s))
    return v


def budget_seconds(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError("expected seconds, got %r" % s)
    if not math.isfinite(v) or v < 5 or v > 86400:
        raise argparse.ArgumentTypeError("expected 5 to 86400 seconds, got %r" % s)
    return v


def name_list(allowed):
    def parse(s):
        items = [x.strip() for x in s.split(",") if x.strip()]
        bad = [x for x in items if x not in allowed]
        if bad or not items:
            raise argparse.ArgumentTypeError("unknown %r; choose from %s" % (",".join(bad) or s, ",".join(allowed)))
        out = []
        for x in items:
            if x not in out:
                out.append(x)
        return out

    return parse


def worker_list(s):
    out = []
    for x in s.split(","):
        x = x.strip()
        if not x:
            continue
        try:
            v = int(x)
        except ValueError:
            raise argparse.ArgumentTypeError("expected numbers of workers like 0,2,4,8, got %r" % s)
        if v < 0 or v > 256:
            raise argparse.ArgumentTypeError("a number of workers is from 0 to 256, got %d" % v)
        if v not in out:
            out.append(v)
    if not out:
        raise argparse.ArgumentTypeError("expected numbers of workers like 0,2,4,8")
    return out


def batch_spec(s):
    """"64" (every model) or "resnet50=64,bert=32"."""
    out = {}
    for part in s.split(","):
        part = part.strip()
        if not part:
            continue
        if "=" in part:
            name, val = part.split("=", 1)
            name = name.strip()
            if name not in MODELS:
                raise argparse.ArgumentTypeError("unknown model %r in --batch; choose from %s" % (name, ",".join(MODELS)))
            out[name] = positive_int(val.strip())
        else:
            v = positive_int(part)
            for m in MODELS:
                out[m] = v
    if not out:
        raise argparse.ArgumentTypeError("expected a batch size like 64 or resnet50=64,bert=32")
    return out


def make_parser():
    p = argparse.ArgumentParser(
        prog="tune_torch.py",
        description="Times PyTorch training steps under the settings that decide training speed (gpuvet tune).",
    )
    p.add_argument("--budget", type=budget_seconds, default=300.0, help="seconds for everything (default 300)")
    p.add_argument("--models", type=name_list(MODELS), default=list(MODELS), help="resnet50,bert,mlp")
    p.add_argument("--batch", type=batch_spec, default={}, help="64, or resnet50=64,bert=32,mlp=256")
    p.add_argument("--image-size", type=positive_int, default=224)
    p.add_argument("--seq-len", type=positive_int, default=128)
    p.add_argument("--settings", type=name_list(ALL_SETTINGS), default=None, help="GPU settings to run (default: all but compile)")
    p.add_argument("--impl", choices=("auto", "library", "builtin"), default="auto",
                   help="models from torchvision/transformers (library), the definitions in this script (builtin), or library when installed (auto)")
    p.add_argument("--compile", action="store_true", help="also time torch.compile (compile time reported apart)")
    p.add_argument("--no-cpu", action="store_true", help="skip the CPU steps")
    p.add_argument("--no-pipeline", action="store_true", help="skip the DataLoader test")
    p.add_argument("--no-ddp", action="store_true", help="skip the multi-GPU DistributedDataParallel step")
    p.add_argument("--workers", type=worker_list, default=None, help="DataLoader num_workers to try (default 0,2,4,8 up to the CPUs)")
    p.add_argument("--ddp-gpus", type=positive_int, default=None, help="GPUs for the DDP step (default: all)")
    p.add_argument("--iters", type=positive_int, default=GPU_ITERS)
    p.add_argument("--warmup", type=positive_int, default=GPU_WARMUP)
    p.add_argument("--cpu-iters", type=positive_int, default=CPU_ITERS)
    p.add_argument("--cpu-warmup", type=positive_int, default=CPU_WARMUP)
    p.add_argument("--dry-run", action="store_true", help="print the plan without importing torch")
    # internal: one rank of the DDP step (started by this script)
    p.add_argument("--ddp-worker", type=str, default=None, help=argparse.SUPPRESS)
    return p


def parse_args(argv):
    args = make_parser().parse_args(argv)
    batches = dict(DEFAULT_BATCH)
    batches.update(args.batch)
    args.batch = batches
    if args.settings is None:
        args.settings = [s for s in ALL_SETTINGS if s != "compile"]
    if args.compile and "compile" not in args.settings:
        args.settings.append("compile")
    return args


# ---------------------------------------------------------------------------------------------
# Budget


class Budget:
    def __init__(self, seconds, clock=time.monotonic):
        self.clock = clock
        self.seconds = seconds
        self.t0 = clock()
        self.deadline = self.t0 + seconds

    def elapsed(self):
        return self.clock() - self.t0

    def remaining(self):
        return self.deadline - self.clock()

    def check(self, need=0.0):
        """Raises BudgetExceeded when less than `need` seconds (plus the reserve) are left."""
        if self.remaining() < need + RESERVE_S:
            raise BudgetExceeded()

    def arm(self):
        """Raises BudgetExceeded in the main thread when the deadline passes, even in a long step."""
        left = max(self.remaining() - RESERVE_S, 0.01)
        signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, left)

    @staticmethod
    def disarm():
        signal.setitimer(signal.ITIMER_REAL, 0)


def _on_alarm(signum, frame):
    raise BudgetExceeded()


def _on_stop(signum, frame):
    raise Interrupted()


def fit_iters(per_iter_s, wanted, remaining_s, minimum=1):
    """How many timed iterations fit in remaining_s, from minimum up to wanted; 0 when not even
    minimum fits. per_iter_s is what a warm-up iteration took."""
    if wanted < minimum:
        return wanted
    if per_iter_s <= 0:
        return wanted
    n = int(remaining_s // per_iter_s)
    if n < minimum:
        return 0
    return min(n, wanted)


def time_iterations(f, sync, warm, iters, budget=None, clock=time.perf_counter):
    """The anchors/bench_models.py method: warm-up, then each iteration timed alone with a
    synchronize, in ms. With a budget, fewer iterations when they would not fit (at least one),
    judged by the last warm-up iteration (the first one may include autotuning or compiling).
    Returns (times_ms, first_warmup_s)."""
    first = last = None
    for _ in range(warm):
        s = clock()
        f()
        sync()
        last = clock() - s
        if first is None:
            first = last
    sync()
    if budget is not None and last is not None:
        n = fit_iters(last, iters, budget.remaining() - RESERVE_S)
        if n == 0:
            raise BudgetExceeded()
        iters = n
    ts = []
    for _ in range(iters):
        s = clock()
        f()
        sync()
        ts.append((clock() - s) * 1000.0)
    return ts, first


# ---------------------------------------------------------------------------------------------
# The plan


def setting_config(name):
    """The switches of a setting measured on its own (channels_last, cudnn_benchmark and compile
    are applied on top of another setting's config at run time)."""
    base = {"precision": "fp32", "grad_scaler": False, "channels_last": False, "cudnn_benchmark": False,
            "tf32_matmul": False, "tf32_cudnn": False, "compile": False}
    if name == "tf32":
        base.update(precision="tf32", tf32_matmul=True, tf32_cudnn=True)
    elif name == "amp_fp16":
        base.update(precision="fp16", grad_scaler=True)
    elif name == "amp_bf16":
        base.update(precision="bf16")
    elif name in ("ref_fp32", "ref_amp_fp16"):
        # anchors/bench_models.py: PyTorch's defaults (cuDNN may use TF32, matmul may not),
        # cudnn.benchmark on, channels_last for the CNN, AMP fp16 without a GradScaler
        base.update(tf32_cudnn=True, cudnn_benchmark=True, channels_last=None)
        if name == "ref_amp_fp16":
            base.update(precision="fp16")
    return base


def plan_steps(args, cuda, ngpu):
    """The list of (kind, model, setting) the run will go through, in order."""
    steps = []
    if cuda:
        # the anchor's settings first, on a fresh model, as anchors/bench_models.py measures them:
        # later in a long run the same setting came out up to 20% slower on the H200 machine
        ordered = [s for s in args.settings if s in REF_SETTINGS] + \
                  [s for s in args.settings if s not in REF_SETTINGS]
        for m in args.models:
            for s in ordered:
                if s in CNN_SETTINGS and m not in CNN_MODELS:
                    continue
                steps.append(("gpu", m, s))
    if not args.no_cpu:
        for m in args.models:
            steps.append(("cpu", m, "fp32"))
    if cuda and not args.no_pipeline and "resnet50" in args.models:
        for w in worker_counts(args):
            for pin in (False, True):
                steps.append(("pipeline", "resnet50", "workers=%d pin_memory=%s" % (w, "on" if pin else "off")))
    if cuda and not args.no_ddp and ngpu >= 2:
        steps.append(("ddp", ddp_model(args), "ddp"))
    return steps


def plan_skips(args, cuda, ngpu):
    """(what, reason) for the parts of a full run that this machine or these options leave out."""
    out = []
    if not cuda:
        out.append(("gpu", "no usable GPU"))
    if cuda and not args.no_pipeline and "resnet50" not in args.models:
        out.append(("pipeline", "the input-pipeline test feeds resnet50; add it to --models"))
    if cuda and not args.no_ddp and ngpu < 2:
        out.append(("ddp", "%d GPU: the DistributedDataParallel step needs 2 or more" % ngpu))
    return out


def cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def worker_counts(args):
    if args.workers is not None:
        return list(args.workers)
    n = cpu_count()
    return [w for w in DEFAULT_WORKERS if w == 0 or w <= n]


def ddp_model(args):
    return "resnet50" if "resnet50" in args.models else args.models[0]


def empty_document(args):
    return {
        "schema": SCHEMA,
        "status": "ok",
        "message": "",
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "env": {"python": platform.python_version(), "executable": sys.executable},
        "config": {
            "budget_s": args.budget,
            "models": list(args.models),
            "batch": {m: args.batch[m] for m in args.models},
            "image_size": args.image_size,
            "seq_len": args.seq_len,
            "settings": list(args.settings),
            "impl": args.impl,
            "gpu_warmup": args.warmup,
            "gpu_iters": args.iters,
            "cpu_warmup": args.cpu_warmup,
            "cpu_iters": args.cpu_iters,
            "compile": bool(args.compile),
        },
        "notes": [],
        "models": [],
        "runs": [],
        "pipeline": [],
        "ddp": None,
        "skipped": [],
        "elapsed_s": 0.0,
    }


# ---------------------------------------------------------------------------------------------
# Models (torch needed from here on)


def builtin_resnet50(torch, num_classes=1000):
    """ResNet-50 v1.5 (stride on the 3x3 conv), the same layers and parameters as torchvision's."""
    nn = torch.nn

    class Bottleneck(nn.Module):
        expansion = 4

        def __init__(self, cin, width, stride, downsample):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(width)
            self.conv3 = nn.Conv2d(width, width * 4, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(width * 4)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = downsample

        def forward(self, x):
            idt = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            return self.relu(out + idt)

    class ResNet50(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
            cin = 64
            layers = []
            for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
                mods = []
                for b in range(blocks):
                    s = stride if b == 0 else 1
                    down = None
                    if b == 0 and (s != 1 or cin != width * 4):
                        down = nn.Sequential(nn.Conv2d(cin, width * 4, 1, stride=s, bias=False), nn.BatchNorm2d(width * 4))
                    mods.append(Bottleneck(cin, width, s, down))
                    cin = width * 4
                layers.append(nn.Sequential(*mods))
            self.layer1, self.layer2, self.layer3, self.layer4 = layers
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(2048, num_classes)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return ResNet50()


def builtin_bert(torch, seq_len, vocab=30522, hidden=768, layers=12, heads=12, ffn=3072, num_labels=2):
    """A BERT-base encoder for sequence classification with the shape of transformers'
    BertForSequenceClassification(BertConfig()): embeddings, 12 post-norm layers, pooler."""
    nn = torch.nn

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.word = nn.Embedding(vocab, hidden)
            self.pos = nn.Embedding(max(512, seq_len), hidden)
            self.token_type = nn.Embedding(2, hidden)
            self.norm = nn.LayerNorm(hidden, eps=1e-12)
            self.drop = nn.Dropout(0.1)
            layer = nn.TransformerEncoderLayer(hidden, heads, ffn, dropout=0.1, activation="gelu",
                                               layer_norm_eps=1e-12, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers)
            self.pool = nn.Linear(hidden, hidden)
            self.cls = nn.Linear(hidden, num_labels)

        def forward(self, input_ids):
            n = input_ids.shape[1]
            posn = torch.arange(n, device=input_ids.device).unsqueeze(0)
            h = self.word(input_ids) + self.pos(posn) + self.token_type(torch.zeros_like(input_ids))
            h = self.encoder(self.drop(self.norm(h)))
            return self.cls(self.drop(torch.tanh(self.pool(h[:, 0]))))

    return Bert()


def builtin_mlp(torch):
    nn = torch.nn
    a, b, c, d = MLP_SHAPE
    return nn.Sequential(nn.Linear(a, b), nn.ReLU(), nn.Linear(b, c), nn.ReLU(), nn.Linear(c, d))


class ModelKit:
    """A model with its inputs, forward and optimizer, built the way anchors/bench_models.py does."""

    def __init__(self, name, impl, module, make_inputs, forward, optimizer, note=None):
        self.name, self.impl, self.module = name, impl, module
        self.make_inputs, self.forward, self.optimizer, self.note = make_inputs, forward, optimizer, note

    @property
    def cnn(self):
        return self.name in CNN_MODELS


def library_available(name):
    try:
        if name == "torchvision":
            import torchvision  # noqa: F401
        else:
            import transformers  # noqa: F401
        return True
    except Exception:
        return False


def build_model(torch, name, args, batch):
    """Returns a ModelKit on the CPU. Raises ImportError when --impl library and the library is
    absent."""
    torch.manual_seed(0)
    note = None
    if name == "resnet50":
        impl = args.impl
        if impl != "builtin":
            if library_available("torchvision"):
                import torchvision
                module, impl = torchvision.models.resnet50(), "torchvision"
            elif impl == "library":
                raise ImportError("torchvision is not installed")
            else:
                impl = "builtin"
                note = "torchvision is not installed: the built-in ResNet-50 definition (the same layers) is used"
        if impl == "builtin":
            module = builtin_resnet50(torch)
        size = args.image_size

        def make_inputs(dev):
            return (torch.randn(batch, 3, size, size, device=dev), torch.randint(0, 1000, (batch,), device=dev))

        def forward(model, x):
            return model(x)

        return ModelKit(name, impl, module, make_inputs, forward, lambda p: torch.optim.SGD(p, lr=0.01), note)
    if name == "bert":
        impl = args.impl
        if impl != "builtin":
            if library_available("transformers"):
                from transformers import BertConfig, BertForSequenceClassification
                cfg = BertConfig()
                if args.seq_len > cfg.max_position_embeddings:
                    cfg.max_position_embeddings = args.seq_len
                module, impl = BertForSequenceClassification(cfg), "transformers"
            elif impl == "library":
                raise ImportError("transformers is not installed")
            else:
                impl = "builtin"
                note = "transformers is not installed: a built-in BERT-base encoder of the same shape is used"
        if impl == "builtin":
            module = builtin_bert(torch, args.seq_len)
        seq = args.seq_len
        lib = impl == "transformers"

        def make_inputs(dev):
            return (torch.randint(0, 30000, (batch, seq), device=dev), torch.randint(0, 2, (batch,), device=dev))

        def forward(model, x):
            return model(**{"input_ids": x}).logits if lib else model(x)

        return ModelKit(name, impl, module, make_inputs, forward, lambda p: torch.optim.AdamW(p, lr=1e-5), note)
    module = builtin_mlp(torch)

    def make_inputs(dev):
        return (torch.randn(batch, MLP_SHAPE[0], device=dev), torch.randint(0, MLP_SHAPE[-1], (batch,), device=dev))

    def forward(model, x):
        return model(x)

    return ModelKit(name, "builtin", module, make_inputs, forward, lambda p: torch.optim.SGD(p, lr=0.01), None)


# ---------------------------------------------------------------------------------------------
# One training step under a config


def apply_flags(torch, cfg):
    torch.backends.cuda.matmul.allow_tf32 = bool(cfg["tf32_matmul"])
    torch.backends.cudnn.allow_tf32 = bool(cfg["tf32_cudnn"])
    torch.backends.cudnn.benchmark = bool(cfg["cudnn_benchmark"])


def make_scaler(torch):
    amp = getattr(torch, "amp", None)
    if amp is not None and hasattr(amp, "GradScaler"):
        try:
            return amp.GradScaler("cuda")
        except TypeError:
            pass
    return torch.cuda.amp.GradScaler()


def make_step(torch, kit, model, opt, dev, cfg):
    """The step of anchors/bench_models.py (step_fn), with a GradScaler for fp16 when asked."""
    prec = cfg["precision"]
    amp = prec in ("fp16", "bf16")
    dtype = torch.bfloat16 if (prec == "bf16" or dev.type == "cpu") else torch.float16
    scaler = make_scaler(torch) if (amp and cfg["grad_scaler"]) else None
    loss_fn = torch.nn.functional.cross_entropy

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=dev.type, dtype=dtype, enabled=amp):
            out = kit.forward(model, x)
            loss = loss_fn(out, y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()

    return step


def to_layout(torch, t, channels_last):
    if channels_last and t.dim() == 4:
        return t.contiguous(memory_format=torch.channels_last)
    return t


def short_error(ex):
    text = str(ex).strip().splitlines()
    msg = text[0] if text else type(ex).__name__
    if "out of memory" in str(ex).lower():
        msg = "out of memory: " + msg
    return (type(ex).__name__ + ": " + msg)[:300]


# ---------------------------------------------------------------------------------------------
# The runner


class Cuda:
    """What the runner asks of the GPU, in one place, so that the tests can run the very same
    code on the CPU (they pass a stand-in that maps the GPU to the CPU)."""

    ddp_backend = "nccl"

    def __init__(self, torch):
        self.torch = torch

    def available(self):
        return bool(self.torch.cuda.is_available())

    def count(self):
        return self.torch.cuda.device_count()

    def properties(self, i):
        p = self.torch.cuda.get_device_properties(i)
        return {"name": p.name, "major": p.major, "minor": p.minor, "total_memory": p.total_memory,
                "uuid": str(getattr(p, "uuid", "") or "")}

    def device(self, i=0):
        return self.torch.device("cuda", i)

    def sync(self):
        self.torch.cuda.synchronize()

    def reset_peak(self):
        self.torch.cuda.reset_peak_memory_stats()

    def peak_mib(self):
        return self.torch.cuda.max_memory_allocated() / 2**20

    def empty_cache(self):
        self.torch.cuda.empty_cache()


class Runner:
    def __init__(self, args, channel=None, budget=None, gpu=None):
        self.args = args
        self.gpu_factory = gpu or Cuda
        self.gpu = None
        self.ch = channel or Channel()
        self.doc = empty_document(args)
        self.budget = budget or Budget(args.budget)
        self.next_id = 1
        self.step_i = 0
        self.steps = []
        self.torch = None
        self.cuda = False
        self.kits = {}

    # -- records
    def new_id(self):
        i = self.next_id
        self.next_id += 1
        return i

    def progress(self, label):
        self.step_i += 1
        self.ch.progress(self.step_i, max(len(self.steps), self.step_i), label)

    def emit(self, kind, rec):
        out = dict(rec)
        out["type"] = kind
        self.ch.result(out)

    def note(self, text):
        if text not in self.doc["notes"]:
            self.doc["notes"].append(text)
            self.emit("note", {"text": text})

    def skip(self, what, reason):
        if any(s["what"] == what for s in self.doc["skipped"]):
            return
        self.doc["skipped"].append({"what": what, "reason": reason})
        self.emit("skip", {"what": what, "reason": reason})

    # -- environment
    def probe_env(self):
        torch = self.torch
        env = self.doc["env"]
        env["torch"] = getattr(torch, "__version__", None)
        env["torch_cuda"] = getattr(getattr(torch, "version", None), "cuda", None)
        try:
            env["cudnn"] = torch.backends.cudnn.version()
        except Exception:
            env["cudnn"] = None
        env["cpu_count"] = cpu_count()
        env["cpu_threads"] = torch.get_num_threads()
        env["cpu"] = cpu_model()
        for lib in ("torchvision", "transformers"):
            try:
                mod = __import__(lib)
                env[lib] = str(getattr(mod, "__version__", "?"))
            except Exception:
                env[lib] = None
        try:
            self.cuda = self.gpu.available()
        except Exception as ex:
            self.cuda = False
            env["cuda_error"] = short_error(ex)
        env["cuda_available"] = self.cuda
        env["gpu_count"] = self.gpu.count() if self.cuda else 0
        if self.cuda:
            props = self.gpu.properties(0)
            env["gpu_name"] = props["name"]
            env["gpu_cc"] = "%d.%d" % (props["major"], props["minor"])
            env["gpu_memory_mib"] = props["total_memory"] / 2**20
            env["gpu_uuid"] = nvml_uuid(props["uuid"])
            env["bf16_supported"] = props["major"] >= 8
            env["gpus"] = [self.gpu.properties(i)["name"] for i in range(env["gpu_count"])]
        self.emit("env", env)

    # -- models
    def kit(self, name, device):
        """The model on a device, built once. One model at a time on the GPU, so that each
        peak-memory figure is its own."""
        key = (name, device)
        if key not in self.kits:
            self.drop_kits(device)
            torch = self.torch
            kit = build_model(torch, name, self.args, self.args.batch[name])
            dev = self.gpu.device() if device == "cuda" else torch.device("cpu")
            kit.module = kit.module.to(dev)
            kit.opt = kit.optimizer(kit.module.parameters())
            kit.inputs = kit.make_inputs(dev)
            self.kits[key] = kit
            self.describe_model(name, kit)
        return self.kits[key]

    def describe_model(self, name, kit):
        if any(m["model"] == name for m in self.doc["models"]):
            return
        meta = {"model": name, "impl": kit.impl, "batch": self.args.batch[name],
                "params": sum(p.numel() for p in kit.module.parameters())}
        if name == "resnet50":
            meta["image_size"] = self.args.image_size
        elif name == "bert":
            meta["seq_len"] = self.args.seq_len
        else:
            meta["shape"] = "-".join(str(x) for x in MLP_SHAPE)
        if kit.note:
            meta["note"] = kit.note
            self.note(kit.note)
        self.doc["models"].append(meta)
        self.emit("model", meta)

    def drop_kits(self, device):
        gone = [k for k in self.kits if k[1] == device]
        for key in gone:
            del self.kits[key]
        if gone and device == "cuda" and self.cuda:
            self.gpu.empty_cache()

    def runs_of(self, model, device="cuda"):
        return [r for r in self.doc["runs"] if r["model"] == model and r["device"] == device]

    def best_run(self, model, names=None, exclude=("compile",)):
        """The fastest finished GPU run of a model among `names` (reference runs never count)."""
        best = None
        for r in self.runs_of(model):
            if r.get("status") != "ok" or r.get("ms") is None or r.get("reference"):
                continue
            if names is not None and r["setting"] not in names:
                continue
            if r["setting"] in exclude:
                continue
            if best is None or r["ms"] < best["ms"]:
                best = r
        return best

    def gpu_config(self, model, setting):
        """(config, base setting) of a GPU run; config None when what it builds on is missing."""
        if setting in PRECISION_SETTINGS:
            return setting_config(setting), (None if setting == "fp32" else "fp32")
        if setting in REF_SETTINGS:
            cfg = setting_config(setting)
            cfg["channels_last"] = model in CNN_MODELS
            return cfg, ("ref_fp32" if setting == "ref_amp_fp16" else None)
        names = {"channels_last": PRECISION_SETTINGS, "cudnn_benchmark": PRECISION_SETTINGS + ("channels_last",),
                 "compile": None}[setting]
        base = self.best_run(model, names)
        if base is None:
            return None, None
        cfg = dict(base["config"])
        cfg[setting] = True
        return cfg, base["setting"]

    # -- one timed configuration
    def fill_times(self, rec, ts, wanted, warm):
        rec["ms"] = statistics.median(ts)
        rec["ms_min"] = min(ts)
        rec["ms_max"] = max(ts)
        rec["iters"] = len(ts)
        rec["warmup"] = warm
        if len(ts) < wanted:
            rec["reduced"] = True

    def finish_run(self, rec):
        self.doc["runs"].append(rec)
        self.emit("run", rec)
        return rec

    def run_gpu(self, model, setting):
        torch = self.torch
        rec = {"id": self.new_id(), "model": model, "device": "cuda", "setting": setting,
               "batch": self.args.batch[model], "status": "ok"}
        if setting in REF_SETTINGS:
            rec["reference"] = True
        cfg, base = self.gpu_config(model, setting)
        if cfg is None:
            rec.update(status="skipped", reason="no setting it builds on was measured")
            return self.finish_run(rec)
        rec["config"], rec["base"] = cfg, base
        if cfg["precision"] == "bf16" and not self.doc["env"].get("bf16_supported"):
            rec.update(status="skipped", reason="bf16 needs compute capability 8.0 or later; this GPU is %s"
                       % self.doc["env"].get("gpu_cc"))
            return self.finish_run(rec)
        if cfg["compile"] and not hasattr(torch, "compile"):
            rec.update(status="skipped", reason="torch.compile needs PyTorch 2.0 or later; this is %s" % torch.__version__)
            return self.finish_run(rec)
        try:
            self.budget.check(1.0)
            kit = self.kit(model, "cuda")
            dev = self.gpu.device()
            apply_flags(torch, cfg)
            kit.module.to(memory_format=torch.channels_last if cfg["channels_last"] else torch.contiguous_format)
            x, y = kit.inputs
            x = to_layout(torch, x, cfg["channels_last"])
            fn = torch.compile(kit.module) if cfg["compile"] else kit.module
            step = make_step(torch, kit, fn, kit.opt, dev, cfg)
            self.ch.mark("begin", rec["id"])
            ts, first = time_iterations(lambda: step(x, y), self.gpu.sync, self.args.warmup,
                                        self.args.iters, self.budget)
            self.ch.mark("end", rec["id"])
            self.gpu.sync()
            self.gpu.reset_peak()
            step(x, y)
            self.gpu.sync()
            rec["peak_mib"] = self.gpu.peak_mib()
            self.fill_times(rec, ts, self.args.iters, self.args.warmup)
            if cfg["compile"] and first is not None:
                rec["compile_s"] = max(first - rec["ms"] / 1000.0, 0.0)
        except (BudgetExceeded, Interrupted, KeyboardInterrupt):
            rec.update(status="budget", reason="the time budget ran out before this step finished")
            self.finish_run(rec)
            raise
        except ImportError as ex:
            rec.update(status="skipped", reason=str(ex))
            self.skip(model, str(ex))
        except Exception as ex:
            rec.update(status="error", reason=short_error(ex))
            self.drop_kits("cuda")
        return self.finish_run(rec)

    def run_cpu(self, model):
        torch = self.torch
        rec = {"id": self.new_id(), "model": model, "device": "cpu", "setting": "fp32",
               "batch": self.args.batch[model], "status": "ok", "config": setting_config("fp32"),
               "threads": torch.get_num_threads()}
        try:
            self.budget.check(2.0)
            kit = self.kit(model, "cpu")
            step = make_step(torch, kit, kit.module, kit.opt, torch.device("cpu"), rec["config"])
            x, y = kit.inputs
            ts, _ = time_iterations(lambda: step(x, y), lambda: None, self.args.cpu_warmup, self.args.cpu_iters,
                                    self.budget)
            self.fill_times(rec, ts, self.args.cpu_iters, self.args.cpu_warmup)
        except (BudgetExceeded, Interrupted, KeyboardInterrupt):
            rec.update(status="budget", reason="the time budget ran out before this step finished")
            self.finish_run(rec)
            raise
        except ImportError as ex:
            rec.update(status="skipped", reason=str(ex))
            self.skip(model, str(ex))
        except Exception as ex:
            rec.update(status="error", reason=short_error(ex))
        finally:
            self.drop_kits("cpu")
        return self.finish_run(rec)

    # -- input pipeline
    def run_pipeline(self, configs):
        """A synthetic image dataset through a DataLoader into ResNet-50's training step on the
        GPU, for each (workers, pin_memory): samples per second reaching the GPU, against what the
        GPU takes with the data already there."""
        torch = self.torch
        args = self.args
        best = self.best_run("resnet50")
        cfg = dict(best["config"]) if best else setting_config("fp32")
        cfg["compile"] = False
        batch = args.batch["resnet50"]
        base = {"model": "resnet50", "batch": batch, "image_size": args.image_size,
                "setting": best["setting"] if best else "fp32", "config": cfg}
        started = False
        for workers, pin in configs:
            self.progress("pipeline workers=%d pin_memory=%s" % (workers, "on" if pin else "off"))
            rec = dict(base, id=self.new_id(), workers=workers, pin_memory=pin, status="ok")
            try:
                self.budget.check(3.0)
                kit = self.kit("resnet50", "cuda")
                dev = self.gpu.device()
                if not started:
                    apply_flags(torch, cfg)
                    kit.module.to(memory_format=torch.channels_last if cfg["channels_last"] else torch.contiguous_format)
                    gx, gy = kit.inputs
                    gx = to_layout(torch, gx, cfg["channels_last"])
                    step = make_step(torch, kit, kit.module, kit.opt, dev, cfg)
                    # what the GPU takes when the data is already there: the loader's ceiling
                    ts, _ = time_iterations(lambda: step(gx, gy), self.gpu.sync, args.warmup, args.iters,
                                            self.budget)
                    base["gpu_samples_s"] = batch * 1000.0 / statistics.median(ts)
                    rec["gpu_samples_s"] = base["gpu_samples_s"]
                    started = True
                n, secs = self.time_loader(step, cfg, batch, workers, pin, rec["id"])
                rec["batches"] = n
                rec["seconds"] = secs
                rec["samples_s"] = n * batch / secs if secs > 0 and n > 0 else None
            except (BudgetExceeded, Interrupted, KeyboardInterrupt):
                rec.update(status="budget", reason="the time budget ran out before this step finished")
                self.finish_pipeline(rec)
                raise
            except ImportError as ex:
                rec.update(status="skipped", reason=str(ex))
            except Exception as ex:
                rec.update(status="error", reason=short_error(ex))
            self.finish_pipeline(rec)

    def finish_pipeline(self, rec):
        self.doc["pipeline"].append(rec)
        self.emit("pipeline", rec)

    def time_loader(self, step, cfg, batch, workers, pin, rec_id):
        torch = self.torch
        nb = PIPELINE_WARMUP_BATCHES + PIPELINE_MAX_BATCHES
        ds = SyntheticImages(batch * nb, self.args.image_size)
        loader = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=False, num_workers=workers,
                                             pin_memory=pin, drop_last=True)
        dev = self.gpu.device()
        cl = cfg["channels_last"]
        it = iter(loader)
        n = 0
        try:
            for _ in range(PIPELINE_WARMUP_BATCHES):
                x, y = next(it)
                step(to_layout(torch, x.to(dev, non_blocking=pin), cl), y.to(dev, non_blocking=pin))
            self.gpu.sync()
            self.ch.mark("begin", rec_id)
            t0 = time.perf_counter()
            for x, y in it:
                step(to_layout(torch, x.to(dev, non_blocking=pin), cl), y.to(dev, non_blocking=pin))
                n += 1
                if time.perf_counter() - t0 > PIPELINE_WINDOW_S:
                    break
            self.gpu.sync()
            secs = time.perf_counter() - t0
            self.ch.mark("end", rec_id)
        finally:
            del it
            del loader
        return n, secs

    # -- multi-GPU
    def run_ddp(self):
        torch = self.torch
        args = self.args
        model = ddp_model(args)
        ngpu = self.gpu.count()
        world = min(args.ddp_gpus or ngpu, ngpu)
        rec = {"id": self.new_id(), "model": model, "batch_per_gpu": args.batch[model], "world_size": world,
               "status": "ok"}
        if world < 2:
            rec.update(status="skipped", reason="--ddp-gpus asks for fewer than 2 GPUs")
            return self.finish_ddp(rec)
        best = self.best_run(model)
        cfg = dict(best["config"]) if best else setting_config("fp32")
        cfg["compile"] = False
        rec["setting"] = best["setting"] if best else "fp32"
        rec["config"] = cfg
        if best is not None:
            rec["single_ms"] = best["ms"]
            rec["single_peak_mib"] = best.get("peak_mib")
        if self.budget.remaining() < DDP_MIN_SECONDS:
            rec.update(status="budget", reason="less than %d s of the budget left for the DDP step" % DDP_MIN_SECONDS)
            return self.finish_ddp(rec)
        self.drop_kits("cuda")
        port = free_port()
        spec = {"backend": self.gpu.ddp_backend, "device_type": self.gpu.device().type, "model": model, "config": cfg, "batch": args.batch[model], "image_size": args.image_size,
                "seq_len": args.seq_len, "impl": args.impl, "warmup": args.warmup, "iters": args.iters,
                "world": world, "timeout_s": max(int(self.budget.remaining()) - 5, 10)}
        env = dict(os.environ)
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(world), NCCL_NVLS_ENABLE="0")
        procs, files = [], []
        try:
            for rank in range(world):
                out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
                files.append((out, err))
                argv = [sys.executable, os.path.abspath(__file__), "--ddp-worker", dumps(dict(spec, rank=rank))]
                procs.append(subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                              env=dict(env, RANK=str(rank), LOCAL_RANK=str(rank))))
            self.ch.mark("begin", rec["id"])
            for p in procs:
                left = self.budget.remaining() - RESERVE_S
                if left <= 0:
                    raise subprocess.TimeoutExpired(p.args, 0)
                p.wait(timeout=left)
            self.ch.mark("end", rec["id"])
        except subprocess.TimeoutExpired:
            rec.update(status="budget", reason="the DDP processes did not finish within the budget")
        except (BudgetExceeded, Interrupted, KeyboardInterrupt):
            rec.update(status="budget", reason="stopped before the DDP processes finished")
            self.kill_all(procs)
            self.finish_ddp(rec)
            raise
        finally:
            self.kill_all(procs)
        rec["ranks"] = [read_rank(rank, out, err, procs[rank].returncode if rank < len(procs) else None)
                        for rank, (out, err) in enumerate(files)]
        summarize_ddp(rec, world)
        return self.finish_ddp(rec)

    @staticmethod
    def kill_all(procs):
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()

    def finish_ddp(self, rec):
        self.doc["ddp"] = rec
        self.emit("ddp", rec)
        return rec

    # -- the whole run
    def run(self):
        args = self.args
        try:
            import torch
        except Exception as ex:
            self.doc["status"] = "no-torch"
            self.doc["message"] = "cannot import torch in %s (Python %s): %s" % (
                sys.executable, platform.python_version(), short_error(ex))
            return self.doc
        self.torch = torch
        self.gpu = self.gpu_factory(torch)
        import warnings
        warnings.filterwarnings("ignore", message=".*TF32.*")
        warnings.filterwarnings("ignore", message=".*fp32_precision.*")
        self.probe_env()
        env = self.doc["env"]
        if not self.cuda:
            self.doc["status"] = "cpu-only"
            if env.get("torch_cuda") is None:
                self.doc["message"] = "this PyTorch (%s) is a CPU-only build: no GPU step can run" % env.get("torch")
            else:
                self.doc["message"] = ("torch.cuda.is_available() is False (PyTorch %s built for CUDA %s)%s: only "
                                       "the CPU steps run" % (env.get("torch"), env.get("torch_cuda"),
                                                              (": " + env["cuda_error"]) if env.get("cuda_error") else ""))
        self.steps = plan_steps(args, self.cuda, env.get("gpu_count", 0))
        for what, reason in plan_skips(args, self.cuda, env.get("gpu_count", 0)):
            self.skip(what, reason)
        for lib, model in (("torchvision", "resnet50"), ("transformers", "bert")):
            if env.get(lib) is None and model in args.models and args.impl == "library":
                self.skip(model, "%s is not installed and --impl library was given" % lib)
        self.budget.arm()
        try:
            self.run_steps()
        except BudgetExceeded:
            if self.doc["status"] == "ok":
                self.doc["status"] = "budget"
            self.doc["message"] = (self.doc["message"] + "; " if self.doc["message"] else "") + \
                "the budget of %g s ran out: the later steps did not run" % args.budget
        except (Interrupted, KeyboardInterrupt):
            self.doc["status"] = "interrupted"
            self.doc["message"] = "interrupted: the steps that finished are reported"
        finally:
            Budget.disarm()
        for kind, model, setting in self.steps[self.step_i:]:
            self.doc["skipped"].append({"what": "%s %s %s" % (kind, model, setting), "reason": self.doc["status"]})
        self.doc["elapsed_s"] = self.budget.elapsed()
        return self.doc

    def run_steps(self):
        steps = self.steps
        i = 0
        while i < len(steps):
            kind, model, setting = steps[i]
            if kind == "pipeline":
                j = i
                while j < len(steps) and steps[j][0] == "pipeline":
                    j += 1
                self.run_pipeline([pipeline_config(s) for _, _, s in steps[i:j]])
                i = j
                continue
            i += 1
            if kind == "gpu":
                self.progress("%s %s" % (model, setting))
                if any(s["what"] == model for s in self.doc["skipped"]):
                    continue
                self.run_gpu(model, setting)
            elif kind == "cpu":
                self.drop_kits("cuda")
                self.progress("%s cpu" % model)
                if any(s["what"] == model for s in self.doc["skipped"]):
                    continue
                self.run_cpu(model)
            elif kind == "ddp":
                self.progress("ddp %s" % model)
                self.run_ddp()


def nvml_uuid(text):
    """torch's device UUID ("8f3e...-...") as NVML writes it ("GPU-8f3e..."); None when it is not
    a UUID (old PyTorch versions printed raw bytes)."""
    t = (text or "").strip()
    prefix = ""
    if t.startswith(("GPU-", "MIG-")):
        prefix, t = t[:4], t[4:]
    hexpart = t.replace("-", "")
    if len(t) != 36 or len(hexpart) != 32 or any(c not in "0123456789abcdefABCDEF" for c in hexpart):
        return None
    return (prefix or "GPU-") + t


def pipeline_config(label):
    """"workers=2 pin_memory=on" -> (2, True)."""
    parts = dict(p.split("=", 1) for p in label.split())
    return int(parts["workers"]), parts["pin_memory"] == "on"


def read_rank(rank, out, err, returncode):
    out.seek(0)
    err.seek(0)
    text = out.read(1 << 16).decode("utf-8", "replace")
    etext = err.read(1 << 20).decode("utf-8", "replace")
    out.close()
    err.close()
    r = None
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                r = json.loads(line)
            except ValueError:
                pass
    if not isinstance(r, dict):
        tail = [ln for ln in etext.strip().splitlines() if ln.strip()][-3:]
        r = {"rank": rank, "error": ("exit %s: " % returncode) + " | ".join(tail)[-400:]}
    return r


def summarize_ddp(rec, world):
    """Step time (the slowest rank), scaling efficiency against one GPU, memory balance."""
    ranks = rec.get("ranks") or []
    errs = [r for r in ranks if r.get("error")]
    if errs and rec["status"] == "ok":
        rec.update(status="error", reason="rank %s: %s" % (errs[0].get("rank"), errs[0]["error"]))
    ms = [r["ms"] for r in ranks if isinstance(r.get("ms"), (int, float))]
    if rec["status"] != "ok" or len(ms) != world:
        return rec
    rec["ddp_ms"] = max(ms)
    if rec.get("single_ms") and rec["ddp_ms"] > 0:
        rec["efficiency"] = rec["single_ms"] / rec["ddp_ms"]
        rec["samples_s"] = world * rec["batch_per_gpu"] * 1000.0 / rec["ddp_ms"]
        rec["single_samples_s"] = rec["batch_per_gpu"] * 1000.0 / rec["single_ms"]
    peaks = [r["peak_mib"] for r in ranks if isinstance(r.get("peak_mib"), (int, float))]
    if len(peaks) == world and max(peaks) > 0:
        rec["memory_balance"] = min(peaks) / max(peaks)
    return rec


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


class SyntheticImages:
    """A map-style dataset (the torch Dataset protocol) of decoded-image-like samples: a random
    224x224 crop of a 256x256 uint8 image, a random flip, conversion to float and normalization:
    the CPU work of a typical image pipeline after JPEG decoding (which is not included)."""

    def __init__(self, length, size, pool=16):
        import torch
        g = torch.Generator().manual_seed(0)
        self.length, self.size = length, size
        self.pool = torch.randint(0, 256, (pool, 3, size + 32, size + 32), dtype=torch.uint8, generator=g)

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        img = self.pool[i % self.pool.shape[0]]
        top, left = (i * 7) % 33, (i * 13) % 33
        x = img[:, top:top + self.size, left:left + self.size]
        if i % 2:
            x = x.flip(2)
        x = x.float().div_(255.0).sub_(0.45).div_(0.225)
        return x, i % 1000


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


# ---------------------------------------------------------------------------------------------
# One DDP rank (a child process of the run)


def die_with_parent():
    """Linux: SIGKILL when the process that started us ends, so a rank whose probe was killed
    outright (gpuvet tune killed by SIGKILL kills the probe the same way) does not stay behind
    holding a GPU. Elsewhere, or without prctl, a no-op."""
    parent = os.getppid()
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(1, int(signal.SIGKILL), 0, 0, 0) != 0:  # PR_SET_PDEATHSIG
            return False
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent:  # it ended before prctl
        os._exit(1)
    return True


def ddp_worker(spec_json):
    """Times the DDP step on one rank and prints one JSON line: {rank, ms, peak_mib} or {rank, error}."""
    spec = json.loads(spec_json)
    rank = int(spec["rank"])
    out = {"rank": rank}
    try:
        import datetime
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        on_gpu = spec.get("device_type", "cuda") == "cuda"
        if on_gpu:
            torch.cuda.set_device(rank)
            dev = torch.device("cuda", rank)

            def sync():
                torch.cuda.synchronize()
        else:  # the tests' stand-in: the same code on the CPU over gloo
            dev = torch.device("cpu")

            def sync():
                pass
        dist.init_process_group(spec.get("backend", "nccl"), rank=rank, world_size=int(spec["world"]),
                                timeout=datetime.timedelta(seconds=int(spec.get("timeout_s", 60))))
        ns = argparse.Namespace(image_size=int(spec["image_size"]), seq_len=int(spec["seq_len"]), impl=spec["impl"])
        cfg = spec["config"]
        kit = build_model(torch, spec["model"], ns, int(spec["batch"]))
        apply_flags(torch, cfg)
        module = kit.module.to(dev)
        if cfg["channels_last"]:
            module = module.to(memory_format=torch.channels_last)
        model = DDP(module, device_ids=[rank] if on_gpu else None)
        opt = kit.optimizer(model.parameters())
        torch.manual_seed(rank)
        x, y = kit.make_inputs(dev)
        x = to_layout(torch, x, cfg["channels_last"])
        step = make_step(torch, kit, model, opt, dev, cfg)
        ts, _ = time_iterations(lambda: step(x, y), sync, int(spec["warmup"]), int(spec["iters"]))
        sync()
        if on_gpu:
            torch.cuda.reset_peak_memory_stats(dev)
        step(x, y)
        sync()
        out.update(ms=statistics.median(ts), ms_min=min(ts), ms_max=max(ts), iters=len(ts))
        if on_gpu:
            out.update(peak_mib=torch.cuda.max_memory_allocated(dev) / 2**20, gpu=torch.cuda.get_device_name(dev))
        dist.barrier()
        dist.destroy_process_group()
    except Exception as ex:
        out["error"] = short_error(ex)
    sys.stdout.write(dumps(out) + "\n")
    sys.stdout.flush()
    return 0 if "error" not in out else 1


# ---------------------------------------------------------------------------------------------


def dry_run_document(args):
    doc = empty_document(args)
    doc["status"] = "dry-run"
    doc["plan"] = [{"kind": k, "model": m, "setting": s} for k, m, s in plan_steps(args, True, 2)]
    return doc


def main(argv=None, stdout=None, channel=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    stdout = stdout if stdout is not None else sys.stdout
    if args.ddp_worker is not None:
        die_with_parent()
        return ddp_worker(args.ddp_worker)
    if args.dry_run:
        stdout.write(dumps(dry_run_document(args), indent=1) + "\n")
        return 0
    signal.signal(signal.SIGTERM, _on_stop)
    signal.signal(signal.SIGINT, _on_stop)
    runner = Runner(args, channel)
    try:
        doc = runner.run()
    except (Interrupted, KeyboardInterrupt):
        doc = runner.doc
        doc["status"] = "interrupted"
        doc["message"] = "interrupted: the steps that finished are reported"
    except BudgetExceeded:
        doc = runner.doc
        doc["status"] = "budget"
    except Exception as ex:  # a bug here must still leave a document with what finished
        import traceback
        traceback.print_exc()
        doc = runner.doc
        doc["status"] = "error"
        doc["message"] = "the probe failed: %s" % short_error(ex)
    doc["elapsed_s"] = runner.budget.elapsed()
    # nothing may stop the document now
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stdout.write(dumps(doc, indent=1) + "\n")
    stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
