/*
 * Rules of GPU health, from NVML's per-GPU facts, the kernel log's Xid lines and CUDA's peer
 * matrix: memory errors, page retirement and row remapping, Xids, PCIe link, clock slowdowns,
 * temperature, other processes, compute and MIG modes, the NVSwitch fabric, P2P.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "health/conditions.h"
#include "kb/kb_nvidia.h"
#include "nvidia/nvml.h"
#include "core/shell.h"
#include "rules/registry.h"
#include "rules/rules_nvidia.h"

#define RETIRED_PAGES_RMA 63 /* dynamic page retirement stops near 64 pages */

static long long gpu_int(const facts *f, int i, const char *field, long long dflt)
{
	return facts_int_or(f, dflt, "nvml.gpu.%d.%s", i, field);
}

static bool gpu_true(const facts *f, int i, const char *field)
{
	return facts_true(f, "nvml.gpu.%d.%s", i, field);
}

static void ecc_uncorrected(rule_ctx *c)
{
	const facts *f = c->facts;
	finding *x = NULL;
	bool current = false;
	int n = nv_gpu_count(f);
	for (int i = 0; i < n; i++) {
		long long vol = gpu_int(f, i, "ecc_uncorrected_volatile", 0);
		long long agg = gpu_int(f, i, "ecc_uncorrected_aggregate", 0);
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
		long long sbe = gpu_int(f, i, "retired_pages_sbe", 0), dbe = gpu_int(f, i, "retired_pages_dbe", 0);
		bool pending = gpu_true(f, i, "retired_pending");
		bool remap_pending = gpu_true(f, i, "remap_pending");
		bool remap_failure = gpu_true(f, i, "remap_failure");
		bool many = sbe + dbe >= RETIRED_PAGES_RMA;
		if (!pending && !remap_pending && !remap_failure && !many)
			continue;
		if (!x)
			x = rule_emit(c, "GPU memory needs a reset or a replacement (page retirement / row remapping)");
		if (remap_failure) {
			finding_evidence(x, "%s: row remapping failed (%lld rows remapped for uncorrectable, %lld for "
					    "correctable errors)",
					 label, gpu_int(f, i, "remapped_uncorrectable", 0),
					 gpu_int(f, i, "remapped_correctable", 0));
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
		const char *bus = facts_str(f, "nvml.gpu.%d.pci_bus_id", i);
		const char *b = bus && strchr(bus, ':') ? strchr(bus, ':') + 1 : NULL;
		if (b && strncasecmp(b, tail, tl) == 0)
			return i;
	}
	return -1;
}

static void xid(rule_ctx *c)
{
	const facts *f = c->facts;
	long long n = facts_int_or(f, 0, "kmsg.xid.count");
	if (n <= 0)
		return;
	finding *x = NULL;
	severity sev = SEV_INFO;
	strlist actions = {0};
	for (long long i = 0; i < n && i < 64; i++) {
		long long code = facts_int_or(f, -1, "kmsg.xid.%lld.code", i);
		if (code < 0)
			continue;
		const fact *tb = facts_get(f, "kmsg.xid.%lld.this_boot", i);
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
		const char *pci = facts_str(f, "kmsg.xid.%lld.pci", i);
		int g = gpu_of_pci(f, pci);
		char where[200], label[160], when[64] = "";
		if (g >= 0)
			snprintf(where, sizeof(where), "%s", nv_gpu_label(f, g, label, sizeof(label)));
		else
			snprintf(where, sizeof(where), "PCI %s", pci ? pci : "?");
		long long t;
		if (facts_int(f, &t, "kmsg.xid.%lld.time", i) && t > 0) {
			time_t tt = (time_t)t;
			struct tm tm;
			if (gmtime_r(&tt, &tm))
				strftime(when, sizeof(when), ", last %Y-%m-%d %H:%M UTC", &tm);
		}
		long long count = facts_int_or(f, 1, "kmsg.xid.%lld.count", i);
		const char *msg = facts_str(f, "kmsg.xid.%lld.message", i);
		finding_evidence(x, "Xid %lld on %s, %lld time(s)%s%s: %s%s%s", code, where, count, when,
				 this_boot ? "" : " (an earlier boot)", known ? v.meaning : "code not in the catalogue",
				 msg && *msg ? " -- " : "", msg ? msg : "");
		if (known && this_boot) {
			char *a = xasprintf("Xid %lld (%s): %s", code, v.name, v.action);
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
		bool have_w = facts_int(f, &w, "nvml.gpu.%d.pcie_width_current", i) &&
			      facts_int(f, &wmax, "nvml.gpu.%d.pcie_width_max", i);
		bool have_g = facts_int(f, &g, "nvml.gpu.%d.pcie_gen_current", i) &&
			      facts_int(f, &gmax, "nvml.gpu.%d.pcie_gen_max", i);
		/* idle GPUs lower the link generation to save power: only a loaded GPU's gen counts */
		long long util = gpu_int(f, i, "utilization_gpu", 0);
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
		const char *bus = facts_str(f, "nvml.gpu.%d.pci_bus_id", i);
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
		if (!facts_int(f, &r, "nvml.gpu.%d.clock_event_reasons", i))
			continue;
		double limit = NAN, dflt = NAN;
		facts_real(f, &limit, "nvml.gpu.%d.power_limit_w", i);
		facts_real(f, &dflt, "nvml.gpu.%d.power_default_limit_w", i);
		double busy = facts_int(f, &util, "nvml.gpu.%d.utilization_gpu", i) ? (double)util / 100 : NAN;
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
				 gv_nvml_clock_reasons_text(cv.reasons, text, sizeof(text)), gpu_int(f, i, "sm_clock_mhz", 0),
				 gpu_int(f, i, "max_sm_clock_mhz", 0), gpu_int(f, i, "temperature_c", 0));
		if (cv.limit_lowered)
			finding_evidence(x, "%s: power limit %.0f W, below the board's default %.0f W", label, limit, dflt);
		else if (cv.reasons & NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP && cv.reasons == NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP)
			finding_evidence(x, "%s: power-capped at %lld%% utilisation", label, gpu_int(f, i, "utilization_gpu", 0));
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
		if (!facts_int(f, &t, "nvml.gpu.%d.temperature_c", i))
			continue;
		facts_int(f, &slow, "nvml.gpu.%d.temperature_slowdown_c", i);
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
	if (!facts_int(f, &used, "nvml.gpu.%d.memory_used_bytes", i) ||
	    !facts_int(f, &total, "nvml.gpu.%d.memory_total_bytes", i) || total <= 0 || used <= 0)
		return false;
	if (!facts_int(f, &freeb, "nvml.gpu.%d.memory_free_bytes", i))
		freeb = total > used ? total - used : 0;
	long long headroom;
	bool held = (double)used > MEMORY_FULL_RATIO * (double)total;
	if (facts_int(f, &headroom, "config.memory_headroom_bytes") && headroom > 0 && freeb < headroom && used >= (256LL << 20))
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
			if (facts_int(f, &used, "nvml.gpu.%d.memory_used_bytes", i) &&
			    facts_int(f, &total, "nvml.gpu.%d.memory_total_bytes", i) && total > 0 && used * 10 < total)
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
		long long np = gpu_int(f, i, "processes.count", 0), shown = 0;
		for (long long k = 0; k < np && k < 64; k++) {
			const char *name = facts_str(f, "nvml.gpu.%d.processes.%lld.name", i, k);
			long long pid = facts_int_or(f, 0, "nvml.gpu.%d.processes.%lld.pid", i, k), pu;
			char mem[48] = "memory not reported";
			if (facts_int(f, &pu, "nvml.gpu.%d.processes.%lld.used_bytes", i, k)) {
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
		if (facts_int(f, &headroom, "config.memory_headroom_bytes") && headroom > 0 && freeb < headroom)
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
		long long np = gpu_int(f, i, "processes.count", 0);
		char label[160];
		nv_gpu_label(f, i, label, sizeof(label));
		for (long long k = 0; k < np && k < 64; k++) {
			if (!x)
				x = rule_emit(c, "other processes use the GPUs");
			const char *name = facts_str(f, "nvml.gpu.%d.processes.%lld.name", i, k);
			long long used;
			char mem[48] = "memory unknown";
			if (facts_int(f, &used, "nvml.gpu.%d.processes.%lld.used_bytes", i, k))
				snprintf(mem, sizeof(mem), "%lld MiB", nv_mib(used));
			const char *type = facts_str(f, "nvml.gpu.%d.processes.%lld.type", i, k);
			finding_evidence(x, "%s: pid %lld %s (%s, %s)", label,
					 facts_int_or(f, 0, "nvml.gpu.%d.processes.%lld.pid", i, k), name ? name : "?", mem,
					 type ? type : "compute");
		}
		/* a container sees no other namespace's processes, only their memory */
		long long used, total;
		if (np == 0 && facts_int(f, &used, "nvml.gpu.%d.memory_used_bytes", i) &&
		    facts_int(f, &total, "nvml.gpu.%d.memory_total_bytes", i) && total > 0 && used > (1LL << 30) &&
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
		const char *mode = facts_str(f, "nvml.gpu.%d.compute_mode", i);
		if (!mode || strcmp(mode, "default") == 0)
			continue;
		long long np = gpu_int(f, i, "processes.count", 0);
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
		const fact *m = facts_get(f, "nvml.gpu.%d.mig_mode", i);
		const fact *p = facts_get(f, "nvml.gpu.%d.mig_pending", i);
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
		long long count = gpu_int(f, i, "mig.count", 0);
		finding_evidence(x, "%s: MIG enabled, %lld MIG device(s)", label, count);
		for (long long k = 0; k < count && k < 16; k++) {
			const char *u = facts_str(f, "nvml.gpu.%d.mig.%lld.uuid", i, k);
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
		const char *first = facts_str(f, "nvml.gpu.%d.mig.0.uuid", i);
		char qm[256];
		if (first && shell_word(qm, sizeof(qm), first))
			finding_fix(x, "select a MIG device by its UUID: export CUDA_VISIBLE_DEVICES=%s", qm);
	}
	if (x)
		finding_fix(x, "CUDA_VISIBLE_DEVICES must name MIG devices by their MIG-... UUID (nvidia-smi -L lists "
			       "them); a CUDA process uses one MIG device");
}

static void fabric_manager(rule_ctx *c)
{
	const facts *f = c->facts;
	finding *x = NULL;
	int n = nv_gpu_count(f);
	for (int i = 0; i < n; i++) {
		const char *st = facts_str(f, "nvml.gpu.%d.fabric_state", i);
		if (!st || strcmp(st, "not_supported") == 0)
			continue; /* not an NVSwitch system */
		const fact *status = facts_get(f, "nvml.gpu.%d.fabric_status", i);
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
	const char *ci = facts_str(f, "cuda.init");
	if (ci && strcmp(ci, "ok") == 0) {
		/* CUDA came up anyway (the fabric finished meanwhile, or this GPU's partition does not
		 * need it): nothing is blocked now, so it is a warning, not a failure */
		x->sev = SEV_WARN;
		finding_evidence(x, "cuInit succeeded, so CUDA is not blocked at the moment");
	}
	const char *dver = facts_str(f, "nvml.driver_version");
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
	long long n = facts_int_or(f, 0, "cuda.device_count");
	if (n < 2)
		return;
	finding *x = NULL;
	int blocked = 0, pairs = 0;
	for (long long i = 0; i < n && i < 16; i++)
		for (long long j = 0; j < n && j < 16; j++) {
			if (i == j)
				continue;
			const fact *p = facts_get(f, "cuda.peer.%lld.%lld", i, j);
			if (!p || p->state != FACT_OK)
				continue;
			pairs++;
			if (p->i)
				continue;
			blocked++;
			if (!x)
				x = rule_emit(c, "GPUs cannot access each other directly (P2P): NCCL and multi-GPU copies go "
						 "through host memory");
			const char *a = facts_str(f, "cuda.dev.%lld.pci_bus_id", i);
			const char *b = facts_str(f, "cuda.dev.%lld.pci_bus_id", j);
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
		const char *seg = kb_gpu_segment(c->kb, facts_str(f, "cuda.dev.%lld.name", i));
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
	{"gpu.ecc-uncorrected", "gpu", SEV_FAIL, "nvml.init", ecc_uncorrected,
	 "uncorrected ECC memory errors"},
	{"gpu.retired-pages", "gpu", SEV_FAIL, "nvml.init", retired_pages,
	 "pending page retirement or row remap, remap failure, too many retired pages"},
	{"gpu.xid", "gpu", SEV_WARN, "kmsg.xid.count", xid, "Xid errors in the kernel log"},
	{"gpu.pcie-degraded", "gpu", SEV_WARN, "nvml.init", pcie_degraded,
	 "PCIe link narrower (or, under load, slower) than the GPU supports"},
	{"gpu.throttled", "gpu", SEV_WARN, "nvml.init", throttled,
	 "clocks held down by thermal, hardware or power-brake slowdown"},
	{"gpu.hot", "gpu", SEV_WARN, "nvml.init", hot, "GPU at 80 C or within 5 C of its slowdown temperature"},
	{"gpu.memory-held", "gpu", SEV_WARN, "nvml.device_count", memory_held_rule,
	 "other processes hold over 90 % of a GPU's memory (or leave less than --memory-headroom)"},
	{"gpu.busy", "gpu", SEV_INFO, "nvml.init", busy, "other processes hold GPU memory or compute"},
	{"gpu.compute-mode", "gpu", SEV_WARN, "nvml.init", compute_mode,
	 "compute mode prohibited, or exclusive while another process holds the GPU"},
	{"gpu.mig", "gpu", SEV_INFO, "nvml.init", mig, "MIG enabled: instances and their UUIDs"},
	{"gpu.fabric-manager", "gpu", SEV_FAIL, "nvml.init", fabric_manager,
	 "NVSwitch system whose fabric is not ready (nvidia-fabricmanager)"},
	{"nccl.p2p-blocked", "gpu", SEV_WARN, "cuda.device_count", p2p_blocked,
	 "GPUs that cannot access each other (cuDeviceCanAccessPeer)"},
	{NULL, NULL, 0, NULL, NULL, NULL},
};
