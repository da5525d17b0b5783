/*
 * Rules of GPU health, from NVML's per-GPU facts, the kernel log's Xid lines and CUDA's peer
 * matrix: memory errors, page retirement and row remapping, Xids, PCIe link, clock slowdowns,
 * temperature, other processes, compute and MIG modes, the NVSwitch fabric, P2P.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/factkeys.h"
#include "health/conditions.h"
#include "kb/kb_nvidia.h"
#include "nvidia/nvml.h"
#include "core/shell.h"
#include "rules/registry.h"
#include "rules/rules_nvidia.h"

#define RETIRED_PAGES_RMA 63 /* dynamic page retirement stops near 64 pages */

static void ecc_uncorrected(rule_ctx *c)
{
	const facts *f = c->facts;
	finding *x = NULL;
	bool current = false;
	int n = nv_gpu_count(f);
	for (int i = 0; i < n; i++) {
		long long vol = facts_int_or(f, 0, FK_NVML_GPU_ECC_UNCORRECTED_VOLATILE(d), i);
		long long agg = facts_int_or(f, 0, FK_NVML_GPU_ECC_UNCORRECTED_AGGREGATE(d), i);
		if (vol <= 0 && agg <= 0)
			continue;
		if (!x)
			x = rule_emit(c, "uncorrectable ECC memory errors");
		char label[160];
		nv_gpu_label(f, i, label, sizeof(label));
		finding_evidence(x, "%s: %lld uncorrected since the driver loaded (volatile), %lld in its lifetime "
				    "(aggregate)",
				 label, vol, agg);
		if (vol > 0) {
			current = true;
			finding_fix(x, "drain the jobs on GPU %d, then reset it: sudo nvidia-smi -r -i %d (nothing may run on "
				       "it), or reboot",
				    i, i);
		}
	}
	if (!x)
		return;
	if (!current) {
		/* only the lifetime counter: it happened before the last reset, which already cleared it */
		x->sev = SEV_WARN;
		finding_evidence(x, "none since the driver loaded: warn, not fail (the GPU was reset since)");
	}
	finding_fix(x, "watch whether the count grows: nvidia-smi -q -d ECC; if uncorrected errors come back, run the "
		       "vendor's field diagnostics (dcgmi diag -r 3) and RMA the GPU");
	x->rank = 2;
}

static void retired_pages(rule_ctx *c)
{
	const facts *f = c->facts;
	finding *x = NULL;
	int n = nv_gpu_count(f);
	for (int i = 0; i < n; i++) {
		char label[160];
		nv_gpu_label(f, i, label, sizeof(label));
		long long sbe = facts_int_or(f, 0, FK_NVML_GPU_RETIRED_PAGES_SBE(d), i), dbe = facts_int_or(f, 0, FK_NVML_GPU_RETIRED_PAGES_DBE(d), i);
		bool pending = facts_true(f, FK_NVML_GPU_RETIRED_PENDING(d), i);
		bool remap_pending = facts_true(f, FK_NVML_GPU_REMAP_PENDING(d), i);
		bool remap_failure = facts_true(f, FK_NVML_GPU_REMAP_FAILURE(d), i);
		bool many = sbe + dbe >= RETIRED_PAGES_RMA;
		if (!pending && !remap_pending && !remap_failure && !many)
			continue;
		if (!x)
			x = rule_emit(c, "GPU memory needs a reset or a replacement (page retirement / row remapping)");
		if (remap_failure) {
			finding_evidence(x, "%s: row remapping failed (%lld rows remapped for uncorrectable, %lld for "
					    "correctable errors)",
					 label, facts_int_or(f, 0, FK_NVML_GPU_REMAPPED_UNCORRECTABLE(d), i),
					 facts_int_or(f, 0, FK_NVML_GPU_REMAPPED_CORRECTABLE(d), i));
			finding_fix(x, "GPU %d has no spare rows left: take it out of service and RMA it", i);
		}
		if (remap_pending) {
			finding_evidence(x, "%s: a row remap is pending", label);
			finding_fix(x, "reset GPU %d to apply the remap: sudo nvidia-smi -r -i %d (nothing may run on it), or "
				       "reboot",
				    i, i);
		}
		if (pending) {
			finding_evidence(x, "%s: page retirement pending (%lld single-bit, %lld double-bit pages retired)",
					 label, sbe, dbe);
			finding_fix(x, "reset GPU %d to retire the pages: sudo nvidia-smi -r -i %d, or reboot", i, i);
		}
		if (many) {
			finding_evidence(x, "%s: %lld pages retired (the limit is about 64)", label, sbe + dbe);
			finding_fix(x, "GPU %d is near its page retirement limit: RMA it", i);
		}
	}
	if (x)
		x->rank = 2;
}

/* "0000:18:00" of the kernel log against NVML's "00000000:18:00.0": bus and device must match. */
static int gpu_of_pci(const facts *f, const char *pci)
{
	if (!pci || !*pci)
		return -1;
	const char *tail = strchr(pci, ':') ? strchr(pci, ':') + 1 : pci; /* "18:00" */
	size_t tl = strlen(tail);
	int n = nv_gpu_count(f);
	for (int i = 0; i < n; i++) {
		const char *bus = facts_str(f, FK_NVML_GPU_PCI_BUS_ID(d), i);
		const char *b = bus && strchr(bus, ':') ? strchr(bus, ':') + 1 : NULL;
		if (b && strncasecmp(b, tail, tl) == 0)
			return i;
	}
	return -1;
}

static void xid(rule_ctx *c)
{
	const facts *f = c->facts;
	long long n = facts_int_or(f, 0, FK_KMSG_XID_COUNT);
	if (n <= 0)
		return;
	finding *x = NULL;
	severity sev = SEV_INFO;
	strlist actions = {0};
	for (long long i = 0; i < n && i < 64; i++) {
		long long code = facts_int_or(f, -1, FK_KMSG_XID_CODE(lld), i);
		if (code < 0)
			continue;
		const fact *tb = facts_get(f, FK_KMSG_XID_THIS_BOOT(lld), i);
		bool this_boot = !tb || tb->state != FACT_OK || tb->i; /* unknown: treat as recent */
		/* one rule with watch and serve (health/conditions.h): application faults (13, 31, 43...)
		 * and older boots are context, GPU faults of this boot a warning */
		xid_verdict v = xid_judge(c->kb, (int)code, this_boot);
		bool known = v.known;
		severity s = v.level >= CLOCKS_DEGRADED ? SEV_WARN : SEV_INFO;
		if (s > sev)
			sev = s;
		if (!x)
			x = rule_emit(c, "the NVIDIA driver logged Xid errors");
		const char *pci = facts_str(f, FK_KMSG_XID_PCI(lld), i);
		int g = gpu_of_pci(f, pci);
		char where[200], label[160], when[64] = "";
		if (g >= 0)
			snprintf(where, sizeof(where), "%s", nv_gpu_label(f, g, label, sizeof(label)));
		else
			snprintf(where, sizeof(where), "PCI %s", pci ? pci : "?");
		long long t;
		char minute[32];
		if (facts_int(f, &t, FK_KMSG_XID_TIME(lld), i) && utc_minute_text(t, minute, sizeof(minute)))
			snprintf(when, sizeof(when), ", last %s", minute);
		long long count = facts_int_or(f, 1, FK_KMSG_XID_N_COUNT(lld), i);
		const char *msg = facts_str(f, FK_KMSG_XID_MESSAGE(lld), i);
		finding_evidence(x, "Xid %lld on %s, %lld time(s)%s%s: %s%s%s", code, where, count, when,
				 this_boot ? "" : " (an earlier boot)", known ? v.meaning : "code not in the catalogue",
				 msg && *msg ? " -- " : "", msg ? msg : "");
		if (known && this_boot) {
			char *a = *v.resolution ? xasprintf("Xid %lld (%s): %s (NVIDIA's resolution: %s)", code, v.name, v.action,
							    v.resolution)
						: xasprintf("Xid %lld (%s): %s", code, v.name, v.action);
			if (!sl_contains(&actions, a))
				sl_push(&actions, a);
			free(a);
		}
	}
	if (!x) {
		sl_free(&actions);
		return;
	}
	x->sev = sev;
	for (size_t i = 0; i < actions.n; i++)
		finding_fix(x, "%s", actions.v[i]);
	sl_free(&actions);
	finding_fix(x, "the full lines: sudo journalctl -k | grep -i 'NVRM: Xid'; the catalogue: "
		       "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html");
	if (sev == SEV_INFO)
		finding_evidence(x, "info only: application faults or events of earlier boots");
}

static void pcie_degraded(rule_ctx *c)
{
	const facts *f = c->facts;
	finding *x = NULL;
	int n = nv_gpu_count(f);
	for (int i = 0; i < n; i++) {
		long long w, wmax, g, gmax;
		bool have_w = facts_int(f, &w, FK_NVML_GPU_PCIE_WIDTH_CURRENT(d), i) &&
			      facts_int(f, &wmax, FK_NVML_GPU_PCIE_WIDTH_MAX(d), i);
		bool have_g = facts_int(f, &g, FK_NVML_GPU_PCIE_GEN_CURRENT(d), i) &&
			      facts_int(f, &gmax, FK_NVML_GPU_PCIE_GEN_MAX(d), i);
		/* idle GPUs lower the link generation to save power: only a loaded GPU's gen counts */
		long long util = facts_int_or(f, 0, FK_NVML_GPU_UTILIZATION_GPU(d), i);
		bool narrow, slow;
		/* one rule with watch and serve (health/conditions.h) */
		if (link_judge(have_w ? (double)w : NAN, have_w ? (double)wmax : NAN, have_g ? (double)g : NAN,
			       have_g ? (double)gmax : NAN, (double)util / 100, &narrow, &slow) == CLOCKS_NONE)
			continue;
		if (!x)
			x = rule_emit(c, "a GPU's PCIe link runs below its capability");
		char label[160];
		nv_gpu_label(f, i, label, sizeof(label));
		if (narrow)
			finding_evidence(x, "%s: link width x%lld of x%lld", label, w, wmax);
		if (slow)
			finding_evidence(x, "%s: PCIe gen %lld of %lld at %lld%% utilisation", label, g, gmax, util);
		const char *bus = facts_str(f, FK_NVML_GPU_PCI_BUS_ID(d), i);
		/* lspci wants "18:00.0": drop NVML's 8-digit domain */
		const char *short_bus = bus && strlen(bus) > 9 && bus[8] == ':' ? bus + 9 : bus;
		char qb[256];
		if (short_bus && shell_word(qb, sizeof(qb), short_bus))
			finding_fix(x, "check the link: sudo lspci -vv -s %s | grep -E 'LnkCap|LnkSta'", qb);
		else
			finding_fix(x, "check the link: sudo lspci -vv | grep -E 'LnkCap|LnkSta'");
	}
	if (!x)
		return;
	finding_evidence(x, "host-device copies (data loading, offload) slow down in proportion");
	finding_fix(x, "reseat the GPU, check its riser or cable, and set the slot to its full width and generation "
		       "in the BIOS (not auto or bifurcated)");
}

static void throttled(rule_ctx *c)
{
	const facts *f = c->facts;
	finding *x = NULL;
	unsigned long long all = 0;
	bool lowered = false;
	int n = nv_gpu_count(f);
	for (int i = 0; i < n; i++) {
		long long r, util;
		if (!facts_int(f, &r, FK_NVML_GPU_CLOCK_EVENT_REASONS(d), i))
			continue;
		double limit = NAN, dflt = NAN;
		facts_real(f, &limit, FK_NVML_GPU_POWER_LIMIT_W(d), i);
		facts_real(f, &dflt, FK_NVML_GPU_POWER_DEFAULT_LIMIT_W(d), i);
		double busy = facts_int(f, &util, FK_NVML_GPU_UTILIZATION_GPU(d), i) ? (double)util / 100 : NAN;
		/* the one rule of watch and serve too (health/conditions.h): the power cap at full load is fine */
		clocks_verdict cv = clocks_judge((unsigned long long)r, busy, limit, dflt);
		if (cv.level < CLOCKS_DEGRADED)
			continue;
		all |= cv.reasons;
		lowered |= cv.limit_lowered;
		if (!x)
			x = rule_emit(c, "GPU clocks are held down by thermal or power protection");
		char label[160], text[256];
		finding_evidence(x, "%s: %s (sm clock %lld of %lld MHz, %lld C)", nv_gpu_label(f, i, label, sizeof(label)),
				 gv_nvml_clock_reasons_text(cv.reasons, text, sizeof(text)), facts_int_or(f, 0, FK_NVML_GPU_SM_CLOCK_MHZ(d), i),
				 facts_int_or(f, 0, FK_NVML_GPU_MAX_SM_CLOCK_MHZ(d), i), facts_int_or(f, 0, FK_NVML_GPU_TEMPERATURE_C(d), i));
		if (cv.limit_lowered)
			finding_evidence(x, "%s: power limit %.0f W, below the board's default %.0f W", label, limit, dflt);
		else if (cv.reasons & NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP && cv.reasons == NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP)
			finding_evidence(x, "%s: power-capped at %lld%% utilisation", label, facts_int_or(f, 0, FK_NVML_GPU_UTILIZATION_GPU(d), i));
	}
	if (!x)
		return;
	if (all & (NVML_CLOCKS_EVENT_REASON_SW_THERMAL_SLOWDOWN | NVML_CLOCKS_EVENT_REASON_HW_THERMAL_SLOWDOWN))
		finding_fix(x, "thermal: improve cooling (airflow, fan curves, blocked intakes, room temperature); "
			       "nvidia-smi -q -d TEMPERATURE shows the limits");
	if (all & NVML_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN)
		finding_fix(x, "power brake: the system asserted the external power-brake signal (PSU or power "
			       "capping by the BMC): check the power supplies and the BMC log");
	if (all & NVML_CLOCKS_EVENT_REASON_HW_SLOWDOWN)
		finding_fix(x, "hardware slowdown: check the GPU power cables and the temperature; nvidia-smi -q -d "
			       "PERFORMANCE shows which reason is active");
	if (lowered)
		finding_fix(x, "the power limit was lowered: restore the default (admin: nvidia-smi -pl WATTS; "
			       "nvidia-smi -q -d POWER shows both)");
	else
		finding_fix(x, "power limit: nvidia-smi -q -d POWER (an admin can raise it with nvidia-smi -pl WATTS within "
			       "the board's range)");
}

static void hot(rule_ctx *c)
{
	const facts *f = c->facts;
	finding *x = NULL;
	int n = nv_gpu_count(f);
	for (int i = 0; i < n; i++) {
		long long t, slow = -1;
		if (!facts_int(f, &t, FK_NVML_GPU_TEMPERATURE_C(d), i))
			continue;
		facts_int(f, &slow, FK_NVML_GPU_TEMPERATURE_SLOWDOWN_C(d), i);
		/* one rule with watch and serve (health/conditions.h) */
		if (hot_judge((double)t, slow > 0 ? (double)slow : NAN) == CLOCKS_NONE)
			continue;
		if (!x)
			x = rule_emit(c, "a GPU runs hot");
		char label[160];
		if (slow > 0)
			finding_evidence(x, "%s: %lld C (slowdown at %lld C)", nv_gpu_label(f, i, label, sizeof(label)), t,
					 slow);
		else
			finding_evidence(x, "%s: %lld C", nv_gpu_label(f, i, label, sizeof(label)), t);
	}
	if (!x)
		return;
	finding_fix(x, "check airflow and fans (blocked intakes, failed fans, neighbouring cards), the room "
		       "temperature, and spread the load over more GPUs");
}

/* ---- gpu.memory-held: others hold so much memory that a new job cannot start ------------- */

/* Whether GPU i's memory is held by others beyond the threshold: above MEMORY_FULL_RATIO (90 %) of the total, or
 * leaving less free than --memory-headroom MIB (config.memory_headroom_bytes). */
static bool memory_held(const facts *f, int i, long long *used_out, long long *total_out, long long *free_out)
{
	long long used, total, freeb;
	if (!facts_int(f, &used, FK_NVML_GPU_MEMORY_USED_BYTES(d), i) ||
	    !facts_int(f, &total, FK_NVML_GPU_MEMORY_TOTAL_BYTES(d), i) || total <= 0 || used <= 0)
		return false;
	if (!facts_int(f, &freeb, FK_NVML_GPU_MEMORY_FREE_BYTES(d), i))
		freeb = total > used ? total - used : 0;
	long long headroom;
	bool held = (double)used > MEMORY_FULL_RATIO * (double)total;
	if (facts_int(f, &headroom, FK_CONFIG_MEMORY_HEADROOM_BYTES) && headroom > 0 && freeb < headroom && used >= (256LL << 20))
		held = true;
	if (used_out)
		*used_out = used, *total_out = total, *free_out = freeb;
	return held;
}

static void memory_held_rule(rule_ctx *c)
{
	const facts *f = c->facts;
	int n = nv_gpu_count(f);
	finding *x = NULL;
	strlist pids = {0};
	strbuf free_gpus;
	sb_init(&free_gpus);
	long long worst_free = -1;
	for (int i = 0; i < n && i < 64; i++) {
		long long used, total, freeb;
		if (!memory_held(f, i, &used, &total, &freeb)) {
			if (facts_int(f, &used, FK_NVML_GPU_MEMORY_USED_BYTES(d), i) &&
			    facts_int(f, &total, FK_NVML_GPU_MEMORY_TOTAL_BYTES(d), i) && total > 0 && used * 10 < total)
				sb_addf(&free_gpus, "%s%d", free_gpus.len ? "," : "", i);
			continue;
		}
		char label[160];
		nv_gpu_label(f, i, label, sizeof(label));
		if (!x)
			x = rule_emit(c, "%s has only %lld MiB free: other processes hold %.1f %% of its memory", label,
				      nv_mib(freeb), 100.0 * (double)used / (double)total);
		else
			finding_evidence(x, "%s: only %lld MiB free, %.1f %% held", label, nv_mib(freeb),
					 100.0 * (double)used / (double)total);
		if (worst_free < 0 || freeb < worst_free)
			worst_free = freeb;
		long long np = facts_int_or(f, 0, FK_NVML_GPU_PROCESSES_COUNT(d), i), shown = 0;
		for (long long k = 0; k < np && k < 64; k++) {
			const char *name = facts_str(f, FK_NVML_GPU_PROCESSES_NAME(d, lld), i, k);
			long long pid = facts_int_or(f, 0, FK_NVML_GPU_PROCESSES_PID(d, lld), i, k), pu;
			char mem[48] = "memory not reported";
			if (facts_int(f, &pu, FK_NVML_GPU_PROCESSES_USED_BYTES(d, lld), i, k)) {
				snprintf(mem, sizeof(mem), "%lld MiB", nv_mib(pu));
				shown += pu;
			}
			finding_evidence(x, "%s: pid %lld %s holds %s", label, pid, name ? name : "(name unknown)", mem);
			char ps[24];
			snprintf(ps, sizeof(ps), "%lld", pid);
			if (pid > 0 && !sl_contains(&pids, ps))
				sl_push(&pids, ps);
		}
		if (np == 0 || used - shown > (1LL << 30))
			finding_evidence(x, "%s: %lld MiB held by processes not visible here (another container or PID "
					    "namespace, or a process that exited while its context lives on)",
					 label, nv_mib(used - shown > 0 ? used - shown : used));
		long long headroom;
		if (facts_int(f, &headroom, FK_CONFIG_MEMORY_HEADROOM_BYTES) && headroom > 0 && freeb < headroom)
			finding_evidence(x, "%s: %lld MiB free is below the %lld MiB asked for (--memory-headroom)", label,
					 nv_mib(freeb), nv_mib(headroom));
	}
	if (x) {
		finding_evidence(x, "a job started now gets at most %lld MiB: allocations fail with \"CUDA out of memory\" "
				    "(cudaErrorMemoryAllocation), and cuDNN and cuBLAS handle creation fails with "
				    "CUDNN_STATUS_NOT_INITIALIZED / CUBLAS_STATUS_NOT_INITIALIZED (no memory for their workspace)",
				 nv_mib(worst_free));
		if (pids.n) {
			strbuf all;
			sb_init(&all);
			for (size_t i = 0; i < pids.n; i++)
				sb_addf(&all, "%s%s", i ? "," : "", pids.v[i]);
			finding_fix(x, "see whose they are and since when: ps -o pid,user,etime,args -p %s; stop them when they "
				       "are finished or stuck: kill %s", all.buf, all.buf);
			sb_free(&all);
		}
		finding_fix(x, "a job that was killed can leave a process holding the memory: nvidia-smi "
			       "--query-compute-apps=pid,process_name,used_memory --format=csv; sudo fuser -v /dev/nvidia*");
		if (free_gpus.len)
			finding_fix(x, "or run on a GPU that is free: CUDA_VISIBLE_DEVICES=%s", free_gpus.buf);
		x->rank = 20;
	}
	sl_free(&pids);
	sb_free(&free_gpus);
}

static void busy(rule_ctx *c)
{
	const facts *f = c->facts;
	finding *x = NULL;
	int n = nv_gpu_count(f);
	for (int i = 0; i < n; i++) {
		if (memory_held(f, i, NULL, NULL, NULL))
			continue; /* gpu.memory-held speaks for this GPU */
		long long np = facts_int_or(f, 0, FK_NVML_GPU_PROCESSES_COUNT(d), i);
		char label[160];
		nv_gpu_label(f, i, label, sizeof(label));
		for (long long k = 0; k < np && k < 64; k++) {
			if (!x)
				x = rule_emit(c, "other processes use the GPUs");
			const char *name = facts_str(f, FK_NVML_GPU_PROCESSES_NAME(d, lld), i, k);
			long long used;
			char mem[48] = "memory unknown";
			if (facts_int(f, &used, FK_NVML_GPU_PROCESSES_USED_BYTES(d, lld), i, k))
				snprintf(mem, sizeof(mem), "%lld MiB", nv_mib(used));
			const char *type = facts_str(f, FK_NVML_GPU_PROCESSES_TYPE(d, lld), i, k);
			finding_evidence(x, "%s: pid %lld %s (%s, %s)", label,
					 facts_int_or(f, 0, FK_NVML_GPU_PROCESSES_PID(d, lld), i, k), name ? name : "?", mem,
					 type ? type : "compute");
		}
		/* a container sees no other namespace's processes, only their memory */
		long long used, total;
		if (np == 0 && facts_int(f, &used, FK_NVML_GPU_MEMORY_USED_BYTES(d), i) &&
		    facts_int(f, &total, FK_NVML_GPU_MEMORY_TOTAL_BYTES(d), i) && total > 0 && used > (1LL << 30) &&
		    used * 20 > total) {
			if (!x)
				x = rule_emit(c, "other processes use the GPUs");
			finding_evidence(x, "%s: %lld of %lld MiB in use by processes not visible here (another container?)",
					 label, nv_mib(used), nv_mib(total));
		}
	}
	if (!x)
		return;
	finding_evidence(x, "benchmarks and training speed are affected, and cuDNN handle creation fails when the "
			    "memory is full");
	finding_fix(x, "free the GPU (stop those processes) or pick another one with CUDA_VISIBLE_DEVICES");
}

static void compute_mode(rule_ctx *c)
{
	const facts *f = c->facts;
	finding *x = NULL;
	int n = nv_gpu_count(f);
	for (int i = 0; i < n; i++) {
		const char *mode = facts_str(f, FK_NVML_GPU_COMPUTE_MODE(d), i);
		if (!mode || strcmp(mode, "default") == 0)
			continue;
		long long np = facts_int_or(f, 0, FK_NVML_GPU_PROCESSES_COUNT(d), i);
		bool prohibited = strcmp(mode, "prohibited") == 0;
		if (!prohibited && np == 0)
			continue; /* exclusive but free: the next process gets it */
		if (!x)
			x = rule_emit(c, "a GPU's compute mode keeps this process off it");
		char label[160];
		nv_gpu_label(f, i, label, sizeof(label));
		if (prohibited)
			finding_evidence(x, "%s: compute mode prohibited: no CUDA context can be created", label);
		else
			finding_evidence(x, "%s: compute mode %s and %lld process(es) already hold it: cuInit/context "
					    "creation fails with CUDA_ERROR_DEVICE_UNAVAILABLE (46)",
					 label, mode, np);
		finding_fix(x, "(admin) sudo nvidia-smi -i %d -c DEFAULT", i);
	}
}

static void mig(rule_ctx *c)
{
	const facts *f = c->facts;
	finding *x = NULL;
	int n = nv_gpu_count(f);
	for (int i = 0; i < n; i++) {
		const fact *m = facts_get(f, FK_NVML_GPU_MIG_MODE(d), i);
		const fact *p = facts_get(f, FK_NVML_GPU_MIG_PENDING(d), i);
		bool on = m && m->state == FACT_OK && m->i;
		bool pend_change = p && p->state == FACT_OK && m && m->state == FACT_OK && p->i != m->i;
		if (!on && !pend_change)
			continue;
		if (!x)
			x = rule_emit(c, "MIG (Multi-Instance GPU) is in use");
		char label[160];
		nv_gpu_label(f, i, label, sizeof(label));
		if (pend_change)
			finding_evidence(x, "%s: MIG mode change to %s is pending until the GPU is reset", label,
					 p->i ? "enabled" : "disabled");
		if (!on)
			continue;
		long long count = facts_int_or(f, 0, FK_NVML_GPU_MIG_COUNT(d), i);
		finding_evidence(x, "%s: MIG enabled, %lld MIG device(s)", label, count);
		for (long long k = 0; k < count && k < 16; k++) {
			const char *u = facts_str(f, FK_NVML_GPU_MIG_UUID(d, lld), i, k);
			if (u)
				finding_evidence(x, "  MIG device %lld: %s", k, u);
		}
		if (count == 0) {
			/* enabled without instances: CUDA sees nothing on this GPU */
			x->sev = SEV_WARN;
			finding_evidence(x, "no GPU instances exist on GPU %d: CUDA sees no device there", i);
			finding_fix(x, "create instances (admin), e.g. sudo nvidia-smi mig -i %d -cgi 9,9 -C (profile ids: "
				       "nvidia-smi mig -lgip), or disable MIG: sudo nvidia-smi -i %d -mig 0",
				    i, i);
		}
		const char *first = facts_str(f, FK_NVML_GPU_MIG_UUID(d, d), i, 0);
		char qm[256];
		if (first && shell_word(qm, sizeof(qm), first))
			finding_fix(x, "select a MIG device by its UUID: export CUDA_VISIBLE_DEVICES=%s", qm);
	}
	if (x)
		finding_fix(x, "CUDA_VISIBLE_DEVICES must name MIG devices by their MIG-... UUID (nvidia-smi -L lists "
			       "them); a CUDA process uses one MIG device");
}

/* A GPU that drives a display runs its kernels under the display's watchdog: one that runs for more
 * than a few seconds is ended with cudaErrorLaunchTimeout (702). */
static void display_watchdog(rule_ctx *c)
{
	const facts *f = c->facts;
	long long n = facts_int_or(f, 0, FK_CUDA_DEVICE_COUNT);
	finding *x = NULL;
	for (long long i = 0; i < n && i < 64; i++) {
		const fact *t = facts_get(f, FK_CUDA_DEV_KERNEL_EXEC_TIMEOUT(lld), i);
		if (!t || t->state != FACT_OK || !t->i)
			continue;
		if (!x)
			x = rule_emit(c, "a GPU drives a display: its watchdog ends kernels that run longer than a few "
					 "seconds (the launch timed out and was terminated)");
		const char *name = facts_str(f, FK_CUDA_DEV_NAME(lld), i);
		const char *bus = facts_str(f, FK_CUDA_DEV_PCI_BUS_ID(lld), i);
		finding_evidence(x, "CUDA device %lld (%s, %s): kernel execution timeout enabled", i, name ? name : "?",
				 bus ? bus : "?");
	}
	if (!x)
		return;
	finding_fix(x, "run long kernels on a GPU without a display (CUDA_VISIBLE_DEVICES), or stop the display server "
		       "on this one (sudo systemctl isolate multi-user.target); a compute-only GPU has no watchdog");
}

/* NVML opens the GPU but answers none of the readings every working GPU gives (its identity,
 * utilization, memory, temperature, power, clock; a list of processes alone says nothing of the
 * GPU): a GPU none of whose values can be read is not usable, whatever the count says. The
 * sampler marks such a GPU lost for watch and serve. A handle that does not open is
 * driver.nvml-failed's. */
static void unreadable(rule_ctx *c)
{
	const facts *f = c->facts;
	int n = nv_gpu_count(f);
	finding *x = NULL;
	for (int i = 0; i < n && i < 256; i++) {
		const fact *v[] = {
			facts_get(f, FK_NVML_GPU_NAME(d), i),           facts_get(f, FK_NVML_GPU_UUID(d), i),
			facts_get(f, FK_NVML_GPU_PCI_BUS_ID(d), i),     facts_get(f, FK_NVML_GPU_UTILIZATION_GPU(d), i),
			facts_get(f, FK_NVML_GPU_MEMORY_TOTAL_BYTES(d), i), facts_get(f, FK_NVML_GPU_MEMORY_USED_BYTES(d), i),
			facts_get(f, FK_NVML_GPU_TEMPERATURE_C(d), i),  facts_get(f, FK_NVML_GPU_POWER_W(d), i),
			facts_get(f, FK_NVML_GPU_SM_CLOCK_MHZ(d), i),
		};
		const fact *first_error = NULL;
		bool any_ok = false;
		for (size_t k = 0; k < GV_ARRAY_LEN(v); k++) {
			if (v[k] && v[k]->state == FACT_OK)
				any_ok = true;
			else if (v[k] && v[k]->state == FACT_ERROR && !first_error)
				first_error = v[k];
		}
		if (any_ok || !first_error ||
		    (first_error->source && strcmp(first_error->source, "nvmlDeviceGetHandleByIndex") == 0))
			continue;
		if (!x)
			x = rule_emit(c, "NVML opens the GPU but cannot read any of its values: it cannot be used or monitored");
		char label[160];
		finding_evidence(x, "%s: every reading failed, %s: %s", nv_gpu_label(f, i, label, sizeof(label)),
				 first_error->source ? first_error->source : "NVML",
				 first_error->error ? first_error->error : "unknown error");
	}
	if (!x)
		return;
	finding_fix(x, "look for Xid errors in the kernel log (sudo dmesg | grep -i xid): Xid 79 or 119 means the GPU "
		       "fell off the bus or its GSP stopped answering");
	finding_fix(x, "with no process on it, reset the GPU (sudo nvidia-smi -r -i N), else reboot; one that fails "
		       "again after a reboot goes back to the vendor");
}

static void fabric_manager(rule_ctx *c)
{
	const facts *f = c->facts;
	finding *x = NULL;
	int n = nv_gpu_count(f);
	for (int i = 0; i < n; i++) {
		const char *st = facts_str(f, FK_NVML_GPU_FABRIC_STATE(d), i);
		if (!st || strcmp(st, "not_supported") == 0)
			continue; /* not an NVSwitch system */
		const fact *status = facts_get(f, FK_NVML_GPU_FABRIC_STATUS(d), i);
		bool status_bad = status && status->state == FACT_ERROR;
		if (strcmp(st, "completed") == 0 && !status_bad)
			continue;
		if (!x)
			x = rule_emit(c, "the NVSwitch fabric is not ready: CUDA fails with CUDA_ERROR_SYSTEM_NOT_READY");
		char label[160];
		nv_gpu_label(f, i, label, sizeof(label));
		finding_evidence(x, "%s: fabric state %s%s%s", label, st, status_bad ? ", status " : "",
				 status_bad && status->error ? status->error : "");
	}
	if (!x)
		return;
	const char *ci = facts_str(f, FK_CUDA_INIT);
	if (ci && strcmp(ci, "ok") == 0) {
		/* CUDA came up anyway (the fabric finished meanwhile, or this GPU's partition does not
		 * need it): nothing is blocked now, so it is a warning, not a failure */
		x->sev = SEV_WARN;
		finding_evidence(x, "cuInit succeeded, so CUDA is not blocked at the moment");
	}
	const char *dver = facts_str(f, FK_NVML_DRIVER_VERSION);
	char branch[16];
	nv_driver_branch(dver, branch, sizeof(branch));
	if (branch[0]) {
		finding_fix(x, "install the fabric manager of exactly this driver (%s): sudo apt install "
			       "nvidia-fabricmanager-%s=%s-1 (Ubuntu/CUDA repository package naming)",
			    dver, branch, dver);
	} else {
		finding_fix(x, "install the nvidia-fabricmanager package of the same version as the driver");
	}
	finding_fix(x, "sudo systemctl enable --now nvidia-fabricmanager; if it fails: journalctl -u "
		       "nvidia-fabricmanager (a version mismatch with the driver is the usual cause)");
	x->rank = 1;
}

static void p2p_blocked(rule_ctx *c)
{
	const facts *f = c->facts;
	long long n = facts_int_or(f, 0, FK_CUDA_DEVICE_COUNT);
	if (n < 2)
		return;
	finding *x = NULL;
	int blocked = 0, pairs = 0;
	for (long long i = 0; i < n && i < 16; i++)
		for (long long j = 0; j < n && j < 16; j++) {
			if (i == j)
				continue;
			const fact *p = facts_get(f, FK_CUDA_PEER(lld, lld), i, j);
			if (!p || p->state != FACT_OK)
				continue;
			pairs++;
			if (p->i)
				continue;
			blocked++;
			if (!x)
				x = rule_emit(c, "GPUs cannot access each other directly (P2P): NCCL and multi-GPU copies go "
						 "through host memory");
			const char *a = facts_str(f, FK_CUDA_DEV_PCI_BUS_ID(lld), i);
			const char *b = facts_str(f, FK_CUDA_DEV_PCI_BUS_ID(lld), j);
			const char *path = nv_cuda_pair_path(f, i, j);
			finding_evidence(x, "CUDA device %lld (%s) cannot access device %lld (%s)%s%s%s", i, a ? a : "?", j,
					 b ? b : "?", path ? ", path " : "", path ? path : "",
					 path ? " (nvidia-smi topo -m)" : "");
		}
	if (!x)
		return;
	/* GeForce boards do not offer P2P at all: that is expected, not a fault */
	bool consumer = true;
	for (long long i = 0; i < n && i < 16; i++) {
		const char *seg = kb_gpu_segment(c->kb, facts_str(f, FK_CUDA_DEV_NAME(lld), i));
		if (!seg || (strcmp(seg, "consumer") != 0 && strcmp(seg, "laptop") != 0))
			consumer = false;
	}
	if (consumer) {
		x->sev = SEV_INFO;
		finding_evidence(x, "consumer (GeForce) GPUs do not support P2P: expected");
	}
	finding_evidence(x, "%d of %d GPU pairs blocked", blocked, pairs);
	finding_fix(x, "PCIe ACS redirects P2P through the root complex: look for ACSCtl 'SrcValid+' in sudo lspci -vvv "
		       "and disable ACS in the BIOS (or per bridge with setpci)");
	finding_fix(x, "with the IOMMU on, use passthrough mode: add iommu=pt (intel_iommu=on iommu=pt) to the kernel "
		       "command line");
	finding_fix(x, "check the topology: nvidia-smi topo -m; stopgap for hangs: export NCCL_P2P_DISABLE=1 (slower)");
}

const rule rules_gpu[] = {
	{"gpu.ecc-uncorrected", "gpu", SEV_FAIL, FK_NVML_INIT, ecc_uncorrected,
	 "uncorrected ECC memory errors"},
	{"gpu.retired-pages", "gpu", SEV_FAIL, FK_NVML_INIT, retired_pages,
	 "pending page retirement or row remap, remap failure, too many retired pages"},
	{"gpu.xid", "gpu", SEV_WARN, FK_KMSG_XID_COUNT, xid, "Xid errors in the kernel log"},
	{"gpu.pcie-degraded", "gpu", SEV_WARN, FK_NVML_INIT, pcie_degraded,
	 "PCIe link narrower (or, under load, slower) than the GPU supports"},
	{"gpu.throttled", "gpu", SEV_WARN, FK_NVML_INIT, throttled,
	 "clocks held down by thermal, hardware or power-brake slowdown"},
	{"gpu.hot", "gpu", SEV_WARN, FK_NVML_INIT, hot, "GPU at 80 C or within 5 C of its slowdown temperature"},
	{"gpu.memory-held", "gpu", SEV_WARN, FK_NVML_DEVICE_COUNT, memory_held_rule,
	 "other processes hold over 90 % of a GPU's memory (or leave less than --memory-headroom)"},
	{"gpu.busy", "gpu", SEV_INFO, FK_NVML_INIT, busy, "other processes hold GPU memory or compute"},
	{"gpu.compute-mode", "gpu", SEV_WARN, FK_NVML_INIT, compute_mode,
	 "compute mode prohibited, or exclusive while another process holds the GPU"},
	{"gpu.mig", "gpu", SEV_INFO, FK_NVML_INIT, mig, "MIG enabled: instances and their UUIDs"},
	{"gpu.unreadable", "gpu", SEV_FAIL, FK_NVML_INIT, unreadable,
	 "NVML opens a GPU but none of its readings (identity, utilization, memory, temperature, power, clock) answers"},
	{"gpu.fabric-manager", "gpu", SEV_FAIL, FK_NVML_INIT, fabric_manager,
	 "NVSwitch system whose fabric is not ready (nvidia-fabricmanager)"},
	{"gpu.display-watchdog", "gpu", SEV_INFO, FK_CUDA_DEVICE_COUNT, display_watchdog,
	 "a GPU that drives a display, whose watchdog ends long kernels (CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT)"},
	{"nccl.p2p-blocked", "gpu", SEV_WARN, FK_CUDA_DEVICE_COUNT, p2p_blocked,
	 "GPUs that cannot access each other (cuDeviceCanAccessPeer)"},
	{NULL, NULL, 0, NULL, NULL, NULL},
};
