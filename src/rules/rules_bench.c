/*
 * Verdicts on a `gpuvet bench` run, from the facts it recorded (layer "bench", docs/facts/bench.md):
 * a figure under its expected fraction of the hardware's peak is a finding that names the likely
 * cause NVML saw during the run; a result that failed verification is a failure. The same rules
 * judge a stored run again: `gpuvet check --facts bench.json`.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "rules/registry.h"
#include "core/factkeys.h"

/* Expected fraction of peak (percent) per GEMM type: under it the figure is a finding. */
static const struct {
	const char *dtype;
	double min_pct;
} gemm_expect[] = {
	{"fp64", 60}, {"fp32", 60}, {"tf32", 50}, {"fp16", 60}, {"bf16", 60}, {"fp8", 50}, {"int8", 50},
};
#define MEMORY_MIN_PCT 70
#define PCIE_MIN_PCT 60
#define SPREAD_MAX 0.05

/* Bits of NVML's clock event reasons that slow a GPU against the user's will. */
#define R_SW_POWER_CAP 0x4ULL
#define R_HW_SLOWDOWN 0x8ULL
#define R_SW_THERMAL 0x20ULL
#define R_HW_THERMAL 0x40ULL
#define R_HW_POWER_BRAKE 0x80ULL
#define R_BAD (R_HW_SLOWDOWN | R_SW_THERMAL | R_HW_THERMAL | R_HW_POWER_BRAKE)

/* A number fact (real or integer); NAN when missing. */
static double num(const facts *f, const char *fmt, ...) GV_PRINTF(2, 3);
static double num(const facts *f, const char *fmt, ...)
{
	char key[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(key, sizeof(key), fmt, ap);
	va_end(ap);
	double v;
	long long i;
	if (facts_real(f, &v, "%s", key))
		return v;
	if (facts_int(f, &i, "%s", key))
		return (double)i;
	return NAN;
}

/* The NVML index of the GPU a figure ran on (bench.<id>.gpu is CUDA's ordinal); -1 unknown. */
static int nvml_of(const facts *f, const char *id)
{
	double cuda = num(f, FK_BENCH_FIGURE_GPU, id);
	if (!isfinite(cuda))
		return -1;
	double g = num(f, FK_BENCH_GPU_NVML_INDEX(d), (int)cuda);
	return isfinite(g) ? (int)g : -1;
}

/* Evidence for a slow figure: the clock it ran at, throttling, heat, power (compute, when
 * gpu_bound), and other processes. */
static void conditions(const facts *f, finding *x, const char *id, int g, bool gpu_bound)
{
	double clk = num(f, FK_BENCH_FIGURE_CLOCK_MHZ, id);
	double maxclk = g >= 0 ? num(f, FK_BENCH_MONITOR_GPU_MAX_SM_CLOCK_MHZ(d), g) : NAN;
	if (isfinite(clk) && maxclk > 0)
		finding_evidence(x, "SM clock during the measurement %.0f MHz of at most %.0f MHz (%.0f%%)", clk, maxclk,
				 clk / maxclk * 100);
	if (g < 0)
		return;
	if (gpu_bound) {
		double reasons = num(f, FK_BENCH_MONITOR_GPU_CLOCK_EVENT_REASONS(d), g);
		if (isfinite(reasons) && ((unsigned long long)reasons & (R_BAD | R_SW_POWER_CAP))) {
			const char *rtext = facts_str(f, FK_BENCH_MONITOR_GPU_CLOCK_EVENT_REASONS_TEXT(d), g);
			finding_evidence(x, "clock event reasons seen during the run: %s", rtext ? rtext : "?");
		}
		double t = num(f, FK_BENCH_MONITOR_GPU_TEMPERATURE_MAX_C(d), g);
		double slow = num(f, FK_BENCH_MONITOR_GPU_TEMPERATURE_SLOWDOWN_C(d), g);
		if (isfinite(t))
			finding_evidence(x, "hottest %.0f C%s", t,
					 isfinite(slow) && t >= slow - 5 ? ", at the slowdown threshold" : "");
		double pw = num(f, FK_BENCH_MONITOR_GPU_POWER_MAX_W(d), g);
		double lim = num(f, FK_BENCH_MONITOR_GPU_POWER_LIMIT_W(d), g);
		if (isfinite(pw) && isfinite(lim) && lim > 0)
			finding_evidence(x, "power up to %.0f W of the %.0f W limit", pw, lim);
	}
	double other = num(f, FK_BENCH_MONITOR_GPU_OTHER_PROCESSES(d), g);
	if (other > 0) {
		const char *who = facts_str(f, FK_BENCH_MONITOR_GPU_OTHER_PROCESSES_TEXT(d), g);
		finding_evidence(x, "%.0f other process%s used the GPU%s%s", other, other == 1 ? "" : "es", who ? ": " : "",
				 who ? who : "");
	}
}

/* Fix lines that follow from the conditions. */
static void condition_fixes(const facts *f, finding *x, int g)
{
	if (g < 0)
		return;
	double reasons = num(f, FK_BENCH_MONITOR_GPU_CLOCK_EVENT_REASONS(d), g);
	unsigned long long r = isfinite(reasons) ? (unsigned long long)reasons : 0;
	if (r & (R_HW_THERMAL | R_SW_THERMAL))
		finding_fix(x, "the GPU slowed down for heat: check airflow, fans and the inlet temperature "
			       "(nvidia-smi -q -d TEMPERATURE,PERFORMANCE)");
	if (r & (R_HW_SLOWDOWN | R_HW_POWER_BRAKE))
		finding_fix(x, "hardware slowdown or power brake: check the power cables and supply, and `nvidia-smi -q -d "
			       "PERFORMANCE` while it runs");
	if (num(f, FK_BENCH_MONITOR_GPU_OTHER_PROCESSES(d), g) > 0)
		finding_fix(x, "stop the other processes on the GPU (nvidia-smi lists them), then run gpuvet bench again");
}

static void gemm_low(rule_ctx *c)
{
	const facts *f = c->facts;
	for (size_t i = 0; i < GV_ARRAY_LEN(gemm_expect); i++) {
		const char *dt = gemm_expect[i].dtype;
		char id[32];
		snprintf(id, sizeof(id), "gemm.%s", dt);
		double pct = num(f, FK_BENCH_FIGURE_PCT_PEAK, id);
		if (!isfinite(pct) || pct >= gemm_expect[i].min_pct)
			continue;
		if (facts_get(f, FK_BENCH_FIGURE_VERIFIED, id) && !facts_true(f, FK_BENCH_FIGURE_VERIFIED, id))
			continue; /* a wrong result is bench.wrong-result, not slow */
		double v = num(f, FK_BENCH_FIGURE_VALUE, id), peak = num(f, FK_BENCH_FIGURE_PEAK, id);
		const char *unit = facts_str(f, FK_BENCH_FIGURE_UNIT, id);
		int g = nvml_of(f, id);
		finding *x = rule_emit(c, "%s GEMM reaches %.0f%% of the GPU's dense peak (expected at least %.0f%%)", dt, pct,
				       gemm_expect[i].min_pct);
		finding_evidence(x, "%s: %.1f %s, peak %.1f %s at the clock it ran at", id, v, unit ? unit : "", peak,
				 unit ? unit : "");
		conditions(f, x, id, g, true);
		condition_fixes(f, x, g);
		static const struct {
			const char *dt, *torch;
		} tt[] = {{"fp64", "float64"}, {"fp32", "float32"}, {"tf32", "float32"}, {"fp16", "float16"}, {"bf16", "bfloat16"}};
		for (size_t k = 0; k < GV_ARRAY_LEN(tt); k++)
			if (strcmp(tt[k].dt, dt) == 0)
				finding_fix(x,
					    "the same GEMM through PyTorch (the same cuBLASLt underneath; both low means the GPU, "
					    "only gpuvet low means a gpuvet bug): python3 -c \"import torch,time; %s"
					    "a=torch.randn(8192,8192,device='cuda',dtype=torch.%s); b=a.clone(); [a@b for _ in "
					    "range(10)]; torch.cuda.synchronize(); t=time.time(); [a@b for _ in range(50)]; "
					    "torch.cuda.synchronize(); print(2*8192**3*50/(time.time()-t)/1e12, 'TFLOP/s')\"",
					    strcmp(dt, "tf32") == 0 ? "torch.backends.cuda.matmul.allow_tf32=True; " : "", tt[k].torch);
	}
}

static void memory_low(rule_ctx *c)
{
	const facts *f = c->facts;
	double copy = num(f, FK_BENCH_FIGURE_PCT_PEAK, "memory.copy"), triad = num(f, FK_BENCH_FIGURE_PCT_PEAK, "memory.triad");
	double best = fmax(isfinite(copy) ? copy : -1, isfinite(triad) ? triad : -1);
	if (best < 0 || best >= MEMORY_MIN_PCT)
		return;
	const char *id = isfinite(triad) && triad >= (isfinite(copy) ? copy : -1) ? "memory.triad" : "memory.copy";
	int g = nvml_of(f, id);
	finding *x = rule_emit(c, "device memory bandwidth reaches %.0f%% of the memory's peak (expected at least %d%%)",
			       best, MEMORY_MIN_PCT);
	finding_evidence(x, "%s: %.0f GB/s of %.0f GB/s", id, num(f, FK_BENCH_FIGURE_VALUE, id), num(f, FK_BENCH_FIGURE_PEAK, id));
	conditions(f, x, id, g, true);
	condition_fixes(f, x, g);
	finding_fix(x, "a memory clock held low (application clocks, a power limit) shows in `nvidia-smi -q -d CLOCK`");
}

static void pcie_low(rule_ctx *c)
{
	const facts *f = c->facts;
	const char *ids[] = {"transfer.h2d_pinned", "transfer.d2h_pinned"};
	finding *x = NULL;
	int g = -1;
	for (size_t i = 0; i < GV_ARRAY_LEN(ids); i++) {
		double pct = num(f, FK_BENCH_FIGURE_PCT_PEAK, ids[i]);
		if (!isfinite(pct) || pct >= PCIE_MIN_PCT)
			continue;
		if (!x)
			x = rule_emit(c, "pinned host-device copies reach %.0f%% of the PCIe link's rate (expected at least %d%%)",
				      pct, PCIE_MIN_PCT);
		double gen = num(f, FK_BENCH_FIGURE_PCIE_GEN, ids[i]), width = num(f, FK_BENCH_FIGURE_PCIE_WIDTH, ids[i]);
		finding_evidence(x, "%s: %.1f GB/s of %.1f GB/s (PCIe Gen%.0f x%.0f during the copy)", ids[i],
				 num(f, FK_BENCH_FIGURE_VALUE, ids[i]), num(f, FK_BENCH_FIGURE_PEAK, ids[i]), gen, width);
		g = nvml_of(f, ids[i]);
	}
	if (!x)
		return;
	double gen = num(f, FK_BENCH_FIGURE_PCIE_GEN, "transfer.h2d_pinned"), width = num(f, FK_BENCH_FIGURE_PCIE_WIDTH, "transfer.h2d_pinned");
	double gmax = g >= 0 ? num(f, FK_BENCH_MONITOR_GPU_PCIE_GEN_MAX(d), g) : NAN;
	double wmax = g >= 0 ? num(f, FK_BENCH_MONITOR_GPU_PCIE_WIDTH_MAX(d), g) : NAN;
	if ((isfinite(gmax) && isfinite(gen) && gen < gmax) || (isfinite(wmax) && isfinite(width) && width < wmax)) {
		finding_evidence(x, "the link trained to Gen%.0f x%.0f although the GPU supports Gen%.0f x%.0f", gen, width, gmax,
				 wmax);
		finding_fix(x, "a degraded link: reseat the GPU or riser, check the slot's PCIe setting in the BIOS, and "
			       "look for AER errors: sudo dmesg | grep -i -e aer -e pcie");
	}
	double gn = num(f, FK_BENCH_TRANSFER_GPU_NUMA_NODE), cn = num(f, FK_BENCH_TRANSFER_CPU_NUMA_NODE);
	if (isfinite(gn) && isfinite(cn) && gn >= 0 && cn >= 0 && gn != cn) {
		finding_evidence(x, "the GPU hangs off NUMA node %.0f but the copy ran on a CPU of node %.0f", gn, cn);
		finding_fix(x, "run on the GPU's node: numactl --cpunodebind=%.0f --membind=%.0f gpuvet bench", gn, gn);
	}
	conditions(f, x, "transfer.h2d_pinned", g, false);
	condition_fixes(f, x, g);
}

static void verify_failed(rule_ctx *c)
{
	const facts *f = c->facts;
	finding *x = NULL;
	for (size_t i = 0; i < facts_count(f); i++) {
		const fact *ft = facts_at(f, i);
		if (ft->state != FACT_OK || ft->type != FV_BOOL || ft->i || !str_starts(ft->key, "bench.") ||
		    !str_ends(ft->key, ".verified"))
			continue;
		char *id = xstrndup(ft->key + 6, strlen(ft->key) - 6 - strlen(".verified"));
		if (!x)
			x = rule_emit(c, "a benchmark computed wrong results");
		const char *why = facts_str(f, FK_BENCH_FIGURE_VERIFY_TEXT, id);
		finding_evidence(x, "%s: %s", id, why ? why : "the result differs from the reference");
		free(id);
	}
	if (!x)
		return;
	finding_fix(x, "look for Xid errors: sudo dmesg | grep -i xid; and ECC errors: nvidia-smi -q -d ECC");
	finding_fix(x, "run it again; if it repeats on this GPU only, the GPU (or its memory) is faulty: report it "
		       "with `gpuvet bench --json` attached");
	x->rank = 0;
}

static void throttled(rule_ctx *c)
{
	const facts *f = c->facts;
	for (int g = 0; g < 64; g++) {
		double reasons = num(f, FK_BENCH_MONITOR_GPU_CLOCK_EVENT_REASONS(d), g);
		if (!isfinite(reasons))
			continue;
		unsigned long long r = (unsigned long long)reasons;
		if (!(r & R_BAD))
			continue;
		const char *rtext = facts_str(f, FK_BENCH_MONITOR_GPU_CLOCK_EVENT_REASONS_TEXT(d), g);
		finding *x = rule_emit(c, "GPU %d slowed its clocks during the benchmarks (%s)", g, rtext ? rtext : "?");
		double t = num(f, FK_BENCH_MONITOR_GPU_TEMPERATURE_MAX_C(d), g);
		if (isfinite(t))
			finding_evidence(x, "hottest %.0f C", t);
		double clk = num(f, FK_BENCH_MONITOR_GPU_SM_CLOCK_MIN_MHZ(d), g), maxclk = num(f, FK_BENCH_MONITOR_GPU_MAX_SM_CLOCK_MHZ(d), g);
		if (isfinite(clk) && isfinite(maxclk))
			finding_evidence(x, "SM clock as low as %.0f MHz of at most %.0f MHz", clk, maxclk);
		condition_fixes(f, x, g);
	}
}

static void gpu_busy(rule_ctx *c)
{
	const facts *f = c->facts;
	bool refused = facts_true(f, FK_BENCH_REFUSED);
	finding *x = NULL;
	for (int g = 0; g < 64; g++) {
		double other = num(f, FK_BENCH_MONITOR_GPU_OTHER_PROCESSES(d), g);
		if (!(other > 0))
			continue;
		if (!x)
			x = refused ? rule_emit_sev(c, SEV_FAIL, "other processes use the GPU: the GPU benchmarks were not run")
				    : rule_emit(c, "other processes used the GPU during the benchmarks: the figures are low");
		const char *who = facts_str(f, FK_BENCH_MONITOR_GPU_OTHER_PROCESSES_TEXT(d), g);
		finding_evidence(x, "GPU %d: %s", g, who ? who : "processes not named (another container?)");
	}
	if (!x)
		return;
	finding_fix(x, "wait for them or stop them (nvidia-smi lists them), then run gpuvet bench again");
	if (refused)
		finding_fix(x, "to measure anyway: gpuvet bench --force");
}

static void gpu_unavailable(rule_ctx *c)
{
	const fact *ft = facts_get(c->facts, FK_BENCH_GPU_STATUS);
	if (!ft || ft->state == FACT_OK)
		return;
	finding *x = rule_emit(c, "no GPU benchmark could run; only the CPU baseline was measured");
	finding_evidence(x, "%s", ft->error ? ft->error : "no GPU");
	finding_fix(x, "`gpuvet check` finds out why the GPU is not usable and what to do");
}

static void library_missing(rule_ctx *c)
{
	const facts *f = c->facts;
	const fact *lt = facts_get(f, FK_BENCH_LIB_CUBLASLT_PATH);
	if (lt && lt->state == FACT_ERROR) {
		finding *x = rule_emit(c, "cuBLASLt was not found: the GEMM benchmarks did not run");
		finding_evidence(x, "%s", lt->error ? lt->error : "not found");
		finding_fix(x, "pip install nvidia-cublas-cu12 (or nvidia-cublas for CUDA 13; PyTorch's wheels bring it), "
			       "or the CUDA toolkit's libcublas package, e.g. sudo apt-get install libcublaslt12");
		finding_fix(x, "or point gpuvet at a copy: GPUVET_CUBLASLT_LIB=/path/to/libcublasLt.so.12 gpuvet bench");
	}
	const fact *nc = facts_get(f, FK_BENCH_LIB_NCCL_PATH);
	if (nc && nc->state == FACT_ERROR) {
		finding *x = rule_emit(c, "NCCL was not found: the collective benchmarks did not run");
		finding_evidence(x, "%s", nc->error ? nc->error : "not found");
		finding_fix(x, "pip install nvidia-nccl-cu12 (PyTorch's wheels bring it) or sudo apt-get install libnccl2; "
			       "or GPUVET_NCCL_LIB=/path/to/libnccl.so.2");
	}
	const fact *bl = facts_get(f, FK_BENCH_LIB_BLAS_PATH);
	if (bl && bl->state == FACT_ERROR) {
		finding *x = rule_emit(c, "no BLAS library was found: the CPU baseline did not run");
		finding_evidence(x, "%s", bl->error ? bl->error : "not found");
		finding_fix(x, "sudo apt-get install libopenblas0 (Debian, Ubuntu) or sudo dnf install openblas (Fedora, RHEL)");
	}
}

static void blas_reference(rule_ctx *c)
{
	const char *impl = facts_str(c->facts, FK_BENCH_LIB_BLAS_IMPL);
	if (!impl || strcmp(impl, "reference or unknown") != 0)
		return;
	finding *x = rule_emit(c, "the CPU baseline used an unoptimised BLAS, so the CPU figures are far too low");
	const char *path = facts_str(c->facts, FK_BENCH_LIB_BLAS_PATH);
	finding_evidence(x, "BLAS library: %s (not OpenBLAS, BLIS or MKL)", path ? path : "?");
	finding_fix(x, "sudo apt-get install libopenblas0 (it takes over libblas.so.3), then run gpuvet bench again");
}

static void unstable(rule_ctx *c)
{
	const facts *f = c->facts;
	finding *x = NULL;
	for (size_t i = 0; i < facts_count(f); i++) {
		const fact *ft = facts_at(f, i);
		if (ft->state != FACT_OK || ft->type != FV_REAL || !str_starts(ft->key, "bench.") ||
		    !str_ends(ft->key, ".spread"))
			continue;
		if (!str_starts(ft->key, "bench.gemm.") && !str_starts(ft->key, "bench.memory."))
			continue;
		if (!(ft->d > SPREAD_MAX))
			continue;
		char *id = xstrndup(ft->key + 6, strlen(ft->key) - 6 - strlen(".spread"));
		if (facts_get(f, FK_BENCH_FIGURE_VERIFIED, id) && !facts_true(f, FK_BENCH_FIGURE_VERIFIED, id)) {
			free(id); /* a wrong result is bench.wrong-result */
			continue;
		}
		if (!x)
			x = rule_emit(c, "some figures varied by more than %.0f%% between repeats", SPREAD_MAX * 100);
		finding_evidence(x, "%s: fastest and slowest repeat differ by %.1f%%", id, ft->d * 100);
		free(id);
	}
	if (x)
		finding_fix(x, "other work on the GPU or the host, or clocks changing with heat: run gpuvet bench again on "
			       "an idle machine (gpuvet watch shows what else runs)");
}

const rule rules_bench[] = {
	{"bench.wrong-result", "bench", SEV_FAIL, FK_BENCH_RUN, verify_failed,
	 "a benchmark's result differs from its reference (GEMM, bandwidth, copies, NCCL)"},
	{"bench.gpu-busy", "bench", SEV_WARN, FK_BENCH_RUN, gpu_busy, "other processes used the GPU during gpuvet bench"},
	{"bench.gemm-low", "bench", SEV_WARN, FK_BENCH_RUN, gemm_low, "a GEMM under its expected fraction of the dense peak"},
	{"bench.memory-low", "bench", SEV_WARN, FK_BENCH_RUN, memory_low,
	 "device memory bandwidth under 70% of the memory's peak"},
	{"bench.pcie-low", "bench", SEV_WARN, FK_BENCH_RUN, pcie_low,
	 "pinned host-device copies under 60% of the PCIe link's rate"},
	{"bench.throttled", "bench", SEV_WARN, FK_BENCH_RUN, throttled,
	 "thermal or hardware clock slowdown during gpuvet bench"},
	{"bench.library-missing", "bench", SEV_WARN, FK_BENCH_RUN, library_missing,
	 "cuBLASLt, NCCL or a BLAS library was not found, so its benchmarks did not run"},
	{"bench.gpu-unavailable", "bench", SEV_INFO, FK_BENCH_RUN, gpu_unavailable,
	 "no GPU benchmark could run (no GPU, no driver)"},
	{"bench.blas-reference", "bench", SEV_INFO, FK_BENCH_RUN, blas_reference,
	 "the CPU baseline ran on the unoptimised reference BLAS"},
	{"bench.unstable", "bench", SEV_INFO, FK_BENCH_RUN, unstable,
	 "GEMM or bandwidth repeats differ by more than 5%"},
	{NULL, NULL, 0, NULL, NULL, NULL},
};
