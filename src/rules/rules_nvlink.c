/*
 * Rules of NVLink health, from the NVML probe's per-link facts (nvml.gpu.N.nvlink.*) and the
 * previous check's counters (history.nvlink.*, put by cmd/nvlink_history.c): a link down, a link
 * slower than its peers, error counters that grew since the last check, error counters at all.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/factkeys.h"
#include "rules/registry.h"
#include "rules/rules_nvidia.h"

#define NVLINK_MAX 18
#define SLOW_PCT 5.0 /* a link this much below the fastest is slow (rates are discrete steps) */

static int link_count(const facts *f, int i)
{
	long long n = facts_int_or(f, 0, FK_NVML_GPU_NVLINK_COUNT(d), i);
	return n < 0 ? 0 : n > NVLINK_MAX ? NVLINK_MAX : (int)n;
}

/* 1 active, 0 inactive, -1 not known (no such link, or its state could not be read) */
static int link_active(const facts *f, int i, int l)
{
	const char *s = facts_str(f, FK_NVML_GPU_NVLINK_STATE(d, d), i, l);
	if (!s)
		return -1;
	return strcmp(s, "active") == 0;
}

static int active_links(const facts *f, int i)
{
	int a = 0;
	for (int l = 0; l < link_count(f, i); l++)
		a += link_active(f, i, l) == 1;
	return a;
}

static void link_down(rule_ctx *c)
{
	const facts *f = c->facts;
	int n = nv_gpu_count(f);
	int with_links = 0, with_active = 0;
	for (int i = 0; i < n; i++) {
		/* a GPU counts when one of its links has a known state: links that could not be read
		 * (NO_PERMISSION on every one) are not links known to be down */
		bool known = false;
		for (int l = 0; l < link_count(f, i) && !known; l++)
			known = link_active(f, i, l) >= 0;
		if (known)
			with_links++;
		if (active_links(f, i) > 0)
			with_active++;
	}
	if (with_links == 0)
		return;
	finding *x = NULL;
	bool fabric_pending = false;
	if (with_active == 0) {
		/* nothing up anywhere: one GPU alone (a VM's slice of an NVSwitch board) says nothing;
		 * several GPUs whose links are all down talk over PCIe */
		if (with_links < 2)
			return;
		/* an NVSwitch board (the GPUs have a fabric) is built for NVLink: a warning; PCIe boards
		 * may simply have no bridge installed: said, as information */
		bool nvswitch = false;
		for (int i = 0; i < n; i++) {
			const char *fs = facts_str(f, FK_NVML_GPU_FABRIC_STATE(d), i);
			nvswitch |= fs && strcmp(fs, "not_supported") != 0;
		}
		x = rule_emit_sev(c, nvswitch ? SEV_WARN : SEV_INFO,
				  "no NVLink is active on any GPU: GPU-to-GPU traffic goes over PCIe");
		for (int i = 0; i < n; i++) {
			int down = 0;
			for (int l = 0; l < link_count(f, i); l++)
				down += link_active(f, i, l) == 0;
			if (down == 0)
				continue;
			char label[160];
			nv_gpu_label(f, i, label, sizeof(label));
			finding_evidence(x, "%s: 0 of %d links active", label, link_count(f, i));
			const char *fs = facts_str(f, FK_NVML_GPU_FABRIC_STATE(d), i);
			if (fs && strcmp(fs, "completed") != 0 && strcmp(fs, "not_supported") != 0)
				fabric_pending = true;
		}
		if (!nvswitch)
			finding_evidence(x, "no NVSwitch fabric: boards without an NVLink bridge installed report their "
					    "links inactive too");
	} else {
		for (int i = 0; i < n; i++) {
			int links = link_count(f, i), act = active_links(f, i);
			if (links == 0 || act == links)
				continue;
			/* a link whose state could not be read is not known to be down */
			int down = 0;
			char list[256] = "";
			size_t len = 0;
			for (int l = 0; l < links; l++) {
				if (link_active(f, i, l) != 0)
					continue;
				down++;
				int w = snprintf(list + len, sizeof(list) - len, "%s%d", len ? ", " : "", l);
				if (w > 0 && (size_t)w < sizeof(list) - len)
					len += (size_t)w;
			}
			if (!down)
				continue;
			if (!x)
				x = rule_emit(c, "NVLink links are down: GPU-to-GPU bandwidth is reduced");
			char label[160];
			nv_gpu_label(f, i, label, sizeof(label));
			finding_evidence(x, "%s: %d of %d links active; inactive: link %s", label, act, links, list);
			if (act == 0) {
				/* cut off from the others: NCCL falls back to PCIe or fails on NVSwitch systems */
				x->sev = SEV_FAIL;
				finding_evidence(x, "GPU %d has no active link while other GPUs have theirs", i);
			}
			const char *fs = facts_str(f, FK_NVML_GPU_FABRIC_STATE(d), i);
			if (fs && strcmp(fs, "completed") != 0 && strcmp(fs, "not_supported") != 0)
				fabric_pending = true;
		}
	}
	if (!x)
		return;
	if (fabric_pending) {
		finding_evidence(x, "the NVSwitch fabric is not ready (see gpu.fabric-manager): links come up when it is");
		finding_fix(x, "start the fabric manager first: sudo systemctl enable --now nvidia-fabricmanager");
	}
	finding_fix(x, "see each link: nvidia-smi nvlink -s (and nvidia-smi topo -m for the paths)");
	finding_fix(x, "a link that stays down after a reboot is a hardware fault (NVLink bridge, board or NVSwitch "
		       "tray): collect sudo nvidia-bug-report.sh for the vendor");
}

static void slow_links_of_model(rule_ctx *c, const char *model, finding **xp);

static void slow_link(rule_ctx *c)
{
	const facts *f = c->facts;
	int n = nv_gpu_count(f);
	finding *x = NULL;
	/* links are compared among GPUs of one model: an A100 beside an H100 is slower by design */
	for (int m = 0; m < n; m++) {
		const char *model = facts_str(f, FK_NVML_GPU_NAME(d), m);
		bool first = true;
		for (int k = 0; k < m && first; k++) {
			const char *other = facts_str(f, FK_NVML_GPU_NAME(d), k);
			first = !((model && other && strcmp(model, other) == 0) || (!model && !other));
		}
		if (first)
			slow_links_of_model(c, model, &x);
	}
	if (!x)
		return;
	finding_fix(x, "see each link's speed: nvidia-smi nvlink -s; a link trained below the others is a failing "
		       "bridge, connector or NVSwitch port");
	finding_fix(x, "reboot to retrain; if it stays slow, collect sudo nvidia-bug-report.sh for the vendor");
}

static bool same_model(const facts *f, int i, const char *model)
{
	const char *name = facts_str(f, FK_NVML_GPU_NAME(d), i);
	return (name && model && strcmp(name, model) == 0) || (!name && !model);
}

static void slow_links_of_model(rule_ctx *c, const char *model, finding **xp)
{
	const facts *f = c->facts;
	int n = nv_gpu_count(f);
	finding *x = *xp;
	long long best_speed = 0, best_version = 0;
	for (int i = 0; i < n; i++)
		for (int l = 0; l < link_count(f, i); l++) {
			if (!same_model(f, i, model) || link_active(f, i, l) != 1)
				continue;
			long long s = facts_int_or(f, 0, FK_NVML_GPU_NVLINK_SPEED_MBPS(d, d), i, l);
			long long v = facts_int_or(f, 0, FK_NVML_GPU_NVLINK_VERSION(d, d), i, l);
			if (s > best_speed)
				best_speed = s;
			if (v > best_version)
				best_version = v;
		}
	for (int i = 0; i < n; i++)
		for (int l = 0; l < link_count(f, i); l++) {
			if (!same_model(f, i, model) || link_active(f, i, l) != 1)
				continue;
			long long s = 0, v = 0;
			bool has_s = facts_int(f, &s, FK_NVML_GPU_NVLINK_SPEED_MBPS(d, d), i, l) && s > 0;
			bool has_v = facts_int(f, &v, FK_NVML_GPU_NVLINK_VERSION(d, d), i, l) && v > 0;
			bool slow_s = has_s && best_speed > 0 && s < best_speed * (1.0 - SLOW_PCT / 100.0);
			bool slow_v = has_v && v < best_version;
			if (!slow_s && !slow_v)
				continue;
			if (!x)
				x = rule_emit(c, "NVLink links run slower than the others: the pairs behind them are slower");
			char label[160];
			nv_gpu_label(f, i, label, sizeof(label));
			char speed[64] = "";
			if (has_s)
				snprintf(speed, sizeof(speed), "%.3f GB/s", s / 1000.0);
			finding_evidence(x, "%s link %d: %s%sNVLink %lld; the fastest link of this model: %.3f GB/s, "
					    "NVLink %lld",
					 label, l, speed, has_s ? ", " : "", v, best_speed / 1000.0, best_version);
		}
	*xp = x;
}

/* The previous check's index of the GPU with this UUID, or -1. */
static int previous_index(const facts *f, const char *uuid)
{
	if (!uuid)
		return -1;
	long long n = facts_int_or(f, 0, FK_HISTORY_NVLINK_GPU_COUNT);
	for (long long p = 0; p < n && p < 256; p++) {
		const char *u = facts_str(f, FK_HISTORY_NVLINK_GPU_UUID(lld), p);
		if (u && strcmp(u, uuid) == 0)
			return (int)p;
	}
	return -1;
}

static void errors_grew(rule_ctx *c)
{
	const facts *f = c->facts;
	const char *when = facts_str(f, FK_HISTORY_NVLINK_PREVIOUS_UTC);
	if (!when)
		return;
	int n = nv_gpu_count(f);
	finding *x = NULL;
	bool reset = false;
	for (int i = 0; i < n; i++) {
		int p = previous_index(f, facts_str(f, FK_NVML_GPU_UUID(d), i));
		if (p < 0)
			continue;
		for (int l = 0; l < link_count(f, i); l++)
			for (size_t k = 0; k < n_nvlink_counter_keys; k++) {
				const nvlink_counter_key *ck = &nvlink_counter_keys[k];
				long long now = 0, before = 0;
				if (!facts_nvlink_counter(f, ck, false, i, l, &now) ||
				    !facts_nvlink_counter(f, ck, true, p, l, &before))
					continue;
				if (now < before) {
					reset = true; /* the driver reloaded (reboot, reset): counters start again */
					continue;
				}
				if (now == before)
					continue;
				if (!x)
					x = rule_emit(c, "NVLink error counters grew since the last check: a link is "
							 "failing or retraining");
				if (ck->grave)
					x->sev = SEV_FAIL;
				char label[160];
				nv_gpu_label(f, i, label, sizeof(label));
				finding_evidence(x, "%s link %d: %s %lld -> %lld (+%lld)", label, l, ck->words,
						 before, now, now - before);
			}
	}
	if (!x)
		return;
	finding_evidence(x, "the last check: %s", when);
	if (reset)
		finding_evidence(x, "other counters went down: the driver reloaded since, those are not compared");
	finding_fix(x, "watch them: nvidia-smi nvlink -e; counters that keep climbing mean a bad bridge, connector "
		       "or NVSwitch port");
	finding_fix(x, "drain the GPU's jobs and collect sudo nvidia-bug-report.sh for the vendor; recovery errors "
		       "stall every transfer over the link while it retrains");
}

static void errors(rule_ctx *c)
{
	const facts *f = c->facts;
	int n = nv_gpu_count(f);
	finding *x = NULL;
	bool have_previous = facts_str(f, FK_HISTORY_NVLINK_PREVIOUS_UTC) != NULL;
	for (int i = 0; i < n; i++) {
		/* a GPU the last check saw is judged by errors-grew */
		if (have_previous && previous_index(f, facts_str(f, FK_NVML_GPU_UUID(d), i)) >= 0)
			continue;
		for (int l = 0; l < link_count(f, i); l++) {
			char text[256] = "";
			size_t len = 0;
			for (size_t k = 0; k < n_nvlink_counter_keys; k++) {
				long long v = 0;
				if (!facts_nvlink_counter(f, &nvlink_counter_keys[k], false, i, l, &v))
					v = 0;
				if (v <= 0)
					continue;
				int w = snprintf(text + len, sizeof(text) - len, "%s%lld %s", len ? ", " : "", v,
						 nvlink_counter_keys[k].words);
				if (w > 0 && (size_t)w < sizeof(text) - len)
					len += (size_t)w;
			}
			if (!len)
				continue;
			if (!x)
				x = rule_emit(c, "NVLink error counters are not zero (since the driver loaded)");
			char label[160];
			nv_gpu_label(f, i, label, sizeof(label));
			finding_evidence(x, "%s link %d: %s", label, l, text);
		}
	}
	if (!x)
		return;
	finding_evidence(x, "no earlier check of these GPUs to compare with: a few errors over a long uptime are "
			    "normal, counters that grow are not");
	finding_fix(x, "run gpuvet check again later (the history keeps these counters): nvlink.errors-grew names "
		       "the links whose counters climb");
}

/* The NVML index of the GPU with this PCI bus id ("0000:18:00.0" as CUDA writes it). */
static int nvml_index_of(const facts *f, const char *bus)
{
	if (!bus)
		return -1;
	int n = nv_gpu_count(f);
	for (int i = 0; i < n; i++) {
		const char *b = facts_str(f, FK_NVML_GPU_PCI_BUS_ID(d), i);
		if (!b)
			continue;
		/* NVML: 8-digit domain; CUDA: 4 */
		const char *x = strlen(b) == 16 ? b + 4 : b, *y = strlen(bus) == 16 ? bus + 4 : bus;
		if (strcasecmp(x, y) == 0)
			return i;
	}
	return -1;
}

const char *nv_cuda_pair_path(const facts *f, long long i, long long j)
{
	int a = nvml_index_of(f, facts_str(f, FK_CUDA_DEV_PCI_BUS_ID(lld), i));
	int b = nvml_index_of(f, facts_str(f, FK_CUDA_DEV_PCI_BUS_ID(lld), j));
	return a < 0 || b < 0 ? NULL : facts_str(f, FK_TOPOLOGY_GPU_GPU(d, d), a, b);
}

const rule rules_nvlink[] = {
	{"nvlink.link-down", "gpu", SEV_WARN, FK_NVML_INIT, link_down,
	 "NVLink links inactive while others are active (or none active on a multi-GPU machine)"},
	{"nvlink.slow-link", "gpu", SEV_WARN, FK_NVML_INIT, slow_link,
	 "NVLink links at a lower speed or version than the machine's other links"},
	{"nvlink.errors-grew", "gpu", SEV_WARN, FK_NVML_INIT, errors_grew,
	 "NVLink CRC, replay or recovery counters grew since the last check (history)"},
	{"nvlink.errors", "gpu", SEV_INFO, FK_NVML_INIT, errors,
	 "NVLink error counters not zero, with no earlier check to compare"},
	{NULL, NULL, 0, NULL, NULL, NULL},
};
