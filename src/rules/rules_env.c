/*
 * Rules of the environment layer: CUDA_VISIBLE_DEVICES against the GPUs, device order,
 * CUDA_LAUNCH_BLOCKING, TORCH_CUDA_ARCH_LIST against compute capabilities, debugging variables
 * left set, PyTorch allocator configuration. The raw values are re-parsed here with the same
 * pure parsers the probe uses (probes/envparse.h), so recorded facts judge the same way.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/envparse.h"
#include "core/shell.h"
#include "rules/registry.h"

#define SHOW_MAX 160

/* The value for an evidence line: cut when long, with its length. */
static char *show(const char *v)
{
	size_t n = strlen(v);
	if (n <= SHOW_MAX)
		return xasprintf("\"%s\"", v);
	return xasprintf("\"%.*s...\" (%zu characters)", SHOW_MAX, v, n);
}

static int nvml_count(const facts *f)
{
	long long n;
	return facts_int(f, &n, "nvml.device_count") && n >= 0 && n < 4096 ? (int)n : -1;
}

/* ---- env.visible-devices -------------------------------------------------------------- */

typedef struct gpu_ids {
	const char **uuids;
	const char **migs;
	size_t nmig;
} gpu_ids;

static void gpu_ids_load(const facts *f, int n, gpu_ids *g)
{
	g->uuids = xcalloc((size_t)(n > 0 ? n : 1), sizeof(char *));
	g->migs = NULL;
	g->nmig = 0;
	for (int i = 0; i < n; i++) {
		g->uuids[i] = facts_str(f, "nvml.gpu.%d.uuid", i);
		long long m = facts_int_or(f, 0, "nvml.gpu.%d.mig.count", i);
		for (long long k = 0; k < m && k < 64; k++) {
			const char *u = facts_str(f, "nvml.gpu.%d.mig.%lld.uuid", i, k);
			if (!u)
				continue;
			g->migs = xrealloc(g->migs, (g->nmig + 1) * sizeof(char *));
			g->migs[g->nmig++] = u;
		}
	}
}

static void visible_devices(rule_ctx *c)
{
	const facts *f = c->facts;
	const char *raw = facts_str(f, "env.cuda_visible_devices");
	if (!raw)
		return; /* unset: every GPU is visible */
	int ngpus = nvml_count(f);
	char *shown = show(raw);
	if (!*raw) {
		finding *x = rule_emit(c, "CUDA_VISIBLE_DEVICES is set but empty: CUDA programs see no GPU");
		finding_evidence(x, "CUDA_VISIBLE_DEVICES=\"\" (an empty list hides every GPU; unset shows them all)");
		if (ngpus > 0)
			finding_evidence(x, "this machine has %d GPU%s", ngpus, ngpus == 1 ? "" : "s");
		finding_fix_unset(x, "CUDA_VISIBLE_DEVICES",
				  "and remove the empty assignment from ~/.bashrc, the job script or the container's environment");
		x->rank = 5;
		free(shown);
		return;
	}
	gpu_ids g;
	gpu_ids_load(f, ngpus, &g);
	static const char *const no_migs[1] = {NULL};
	cvd_system sys = {ngpus, g.uuids, g.nmig, NULL};
	if (ngpus >= 0) /* NVML answered: the MIG devices it lists are all there are */
		sys.mig_uuids = g.migs ? g.migs : no_migs;
	cvd_list l;
	cvd_parse(raw, 1024, &l);
	cvd_resolution r;
	cvd_resolve(&l, &sys, &r);

	finding *x = NULL;
	if (r.visible == 0) {
		bool neg = l.n && l.v[0].kind == CVD_NEGATIVE;
		char brief[48];
		if (strlen(raw) > 40)
			snprintf(brief, sizeof(brief), "%.37s...", raw);
		else
			snprintf(brief, sizeof(brief), "%s", raw);
		x = rule_emit(c, "CUDA_VISIBLE_DEVICES=%s hides every GPU%s", brief,
			      neg ? " (fine only if the job is meant to run on the CPU)" : "");
	} else if (r.bad) {
		x = rule_emit(c, "CUDA_VISIBLE_DEVICES lists entries CUDA cannot use: only the first %zu of %zu take effect",
			      r.visible, l.total);
	} else if (l.spaces) {
		x = rule_emit_sev(c, SEV_WARN, "CUDA_VISIBLE_DEVICES has blanks around its entries");
	} else if (r.mig_entries > 1) {
		x = rule_emit_sev(c, SEV_WARN, "CUDA_VISIBLE_DEVICES lists %zu MIG devices but a CUDA process uses only the "
					       "first", r.mig_entries);
	}
	if (x) {
		finding_evidence(x, "CUDA_VISIBLE_DEVICES=%s", shown);
		if (r.stop_at >= 0)
			finding_evidence(x, "CUDA stops reading the list at entry %ld ('%s'): %s; it ignores that entry and "
					    "every one after it", r.stop_at + 1, l.v[r.stop_at].text, cvd_stop_text(r.stop));
		size_t shown_bad = 0;
		for (size_t i = 0; i < l.n && shown_bad < 8; i++) {
			cvd_stop st = r.status[i];
			if (st != CVD_OK && (long)i != r.stop_at) {
				finding_evidence(x, "entry %zu ('%s') is also %s", i + 1, l.v[i].text, cvd_stop_text(st));
				shown_bad++;
			}
		}
		if (l.total > l.n)
			finding_evidence(x, "the list has %zu entries; the first %zu were examined", l.total, l.n);
		if (l.spaces)
			finding_evidence(x, "entries have blanks around them; write the list without spaces");
		if (r.mig_entries > 1)
			finding_evidence(x, "a CUDA process enumerates a single MIG device: the first one listed");
		if (ngpus < 0) {
			finding_evidence(x, "NVML is not available: indexes and UUIDs were not checked against the GPUs");
		} else {
			finding_evidence(x, "this machine has %d GPU%s (indexes 0..%d)", ngpus, ngpus == 1 ? "" : "s",
					 ngpus - 1);
			for (int i = 0; i < ngpus && i < 8; i++)
				if (g.uuids[i])
					finding_evidence(x, "GPU %d: %s %s", i, g.uuids[i],
							 facts_str(f, "nvml.gpu.%d.name", i) ? facts_str(f, "nvml.gpu.%d.name", i) : "");
		}
		if (r.corrected[0] && (r.bad || l.spaces)) {
			char q[1024];
			finding_fix_export(x, "CUDA_VISIBLE_DEVICES", shell_word(q, sizeof(q), r.corrected) ? q : "''", NULL);
		} else if (r.mig_entries > 1) {
			finding_fix(x, "run one process per MIG device, each with its own CUDA_VISIBLE_DEVICES=MIG-...");
		} else if (ngpus > 0) {
			strbuf all;
			sb_init(&all);
			for (int i = 0; i < ngpus && i < 64; i++)
				sb_addf(&all, "%s%d", i ? "," : "", i);
			finding_fix_unset(x, "CUDA_VISIBLE_DEVICES", "every GPU");
			finding_fix(x, "or export CUDA_VISIBLE_DEVICES=%s", all.buf);
			sb_free(&all);
		} else {
			finding_fix(x, "unset CUDA_VISIBLE_DEVICES, or list GPU indexes from `nvidia-smi -L` (0,1,...) or their "
				       "GPU-... UUIDs");
		}
		finding_fix(x, "set it before the program starts: CUDA reads it once, when it initialises");
		x->rank = r.visible == 0 ? 5 : 50;
	}
	cvd_resolution_free(&r);
	cvd_free(&l);
	free(g.uuids);
	free(g.migs);
	free(shown);
}

/* ---- env.device-order ------------------------------------------------------------------ */

/* "00000000:18:00.0" and "0000:18:00.0" compare equal. */
static void bus_norm(const char *s, char *out, size_t n)
{
	unsigned dom = 0, bus = 0, dev = 0, fn = 0;
	if (!s || sscanf(s, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
		snprintf(out, n, "%s", s ? s : "?");
	else
		snprintf(out, n, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
}

static void device_order(rule_ctx *c)
{
	const facts *f = c->facts;
	const char *order = facts_str(f, "env.cuda_device_order");
	if (order && (strcmp(order, "PCI_BUS_ID") == 0 || strcmp(order, "FASTEST_FIRST") == 0))
		return; /* a deliberate choice either way */
	bool bad_value = order != NULL;
	int n = nvml_count(f);
	bool mixed = false;
	for (int i = 1; i < n; i++) {
		const char *a = facts_str(f, "nvml.gpu.0.name"), *b = facts_str(f, "nvml.gpu.%d.name", i);
		if (a && b && strcmp(a, b) != 0)
			mixed = true;
	}
	/* CUDA's order against NVML's, when CUDA saw every GPU */
	bool differs = false;
	long long ncuda;
	if (n > 1 && !facts_str(f, "env.cuda_visible_devices") && facts_int(f, &ncuda, "cuda.device_count") && ncuda == n) {
		for (int i = 0; i < n; i++) {
			char a[32], b[32];
			const char *na = facts_str(f, "nvml.gpu.%d.pci_bus_id", i), *cb = facts_str(f, "cuda.dev.%d.pci_bus_id", i);
			if (!na || !cb)
				continue;
			bus_norm(na, a, sizeof(a));
			bus_norm(cb, b, sizeof(b));
			if (strcmp(a, b) != 0)
				differs = true;
		}
	}
	if (!mixed && !differs && !bad_value)
		return;
	finding *x;
	if (differs)
		x = rule_emit(c, "CUDA numbers the GPUs differently from nvidia-smi");
	else if (mixed)
		x = rule_emit(c, "GPUs of different models: CUDA numbers them fastest first, not in nvidia-smi's order");
	else
		x = rule_emit(c, "CUDA_DEVICE_ORDER=%s is not a value CUDA knows", order);
	if (bad_value)
		finding_evidence(x, "CUDA_DEVICE_ORDER=\"%s\": CUDA knows FASTEST_FIRST (the default) and PCI_BUS_ID; "
				    "anything else is ignored", order);
	else
		finding_evidence(x, "CUDA_DEVICE_ORDER is not set: CUDA uses FASTEST_FIRST");
	for (int i = 0; i < n && i < 16 && (mixed || differs); i++) {
		const char *name = facts_str(f, "nvml.gpu.%d.name", i), *bus = facts_str(f, "nvml.gpu.%d.pci_bus_id", i);
		finding_evidence(x, "nvidia-smi GPU %d: %s%s%s", i, name ? name : "?", bus ? " at " : "", bus ? bus : "");
	}
	for (int i = 0; i < n && i < 16 && differs; i++) {
		const char *name = facts_str(f, "cuda.dev.%d.name", i), *bus = facts_str(f, "cuda.dev.%d.pci_bus_id", i);
		finding_evidence(x, "CUDA device %d: %s%s%s", i, name ? name : "?", bus ? " at " : "", bus ? bus : "");
	}
	finding_fix_export(x, "CUDA_DEVICE_ORDER", "PCI_BUS_ID",
			   "CUDA's device N is then nvidia-smi's GPU N, and CUDA_VISIBLE_DEVICES indexes mean the same in both");
}

/* ---- env.launch-blocking --------------------------------------------------------------- */

static void launch_blocking(rule_ctx *c)
{
	const char *v = facts_str(c->facts, "env.cuda_launch_blocking");
	if (!v)
		return;
	char *end;
	long on = strtol(v, &end, 10);
	if (end == v || on == 0)
		return;
	finding *x = rule_emit(c, "CUDA_LAUNCH_BLOCKING=%s: every kernel launch waits for the GPU to finish", v);
	finding_evidence(x, "CUDA_LAUNCH_BLOCKING=\"%s\" serializes the CPU and the GPU: training runs much slower", v);
	finding_fix_unset(x, "CUDA_LAUNCH_BLOCKING", "and remove it from ~/.bashrc or the job script");
	finding_fix(x, "keep it only while debugging a failing kernel: it makes the error point at the right call");
}

/* ---- env.arch-list ---------------------------------------------------------------------- */

static void arch_list_rule(rule_ctx *c)
{
	const facts *f = c->facts;
	const char *raw = facts_str(f, "env.torch_cuda_arch_list");
	if (!raw)
		return;
	arch_list l;
	arch_list_parse(raw, &l);
	if (l.empty || l.native) {
		arch_list_free(&l);
		return;
	}
	int n = nvml_count(f);
	/* the distinct compute capabilities of the GPUs, and how the list covers each */
	int ccs[16][2];
	int ncc = 0;
	arch_cover worst = ARCH_EXACT;
	for (int i = 0; i < n && ncc < 16; i++) {
		const char *cc = facts_str(f, "nvml.gpu.%d.cc", i);
		int ma, mi, pa;
		if (!cc || version_parse(cc, &ma, &mi, &pa) < 2)
			continue;
		bool dup = false;
		for (int k = 0; k < ncc; k++)
			dup |= ccs[k][0] == ma && ccs[k][1] == mi;
		if (dup)
			continue;
		ccs[ncc][0] = ma;
		ccs[ncc][1] = mi;
		ncc++;
		arch_cover cv = arch_list_covers(&l, ma, mi);
		if (cv < worst)
			worst = cv;
	}
	size_t unknown = 0;
	for (size_t i = 0; i < l.n; i++)
		unknown += !l.v[i].known;
	bool broken = l.invalid.n > 0 || unknown > 0;
	if (!broken && (ncc == 0 || worst == ARCH_EXACT)) {
		arch_list_free(&l);
		return;
	}
	char *shown = show(raw);
	finding *x;
	if (ncc && worst == ARCH_NOT_COVERED)
		x = rule_emit(c, "TORCH_CUDA_ARCH_LIST lacks this machine's GPU architecture: extensions built with it fail "
				 "with \"no kernel image is available\"");
	else if (broken)
		x = rule_emit(c, "TORCH_CUDA_ARCH_LIST has entries PyTorch rejects");
	else
		x = rule_emit_sev(c, SEV_INFO, "TORCH_CUDA_ARCH_LIST covers this GPU only through %s",
				  worst == ARCH_PTX_JIT ? "PTX JIT compilation (slow first start)" : "code for an older minor version");
	finding_evidence(x, "TORCH_CUDA_ARCH_LIST=%s", shown);
	for (size_t i = 0; i < l.invalid.n; i++)
		finding_evidence(x, "'%s' is not an architecture: torch.utils.cpp_extension raises \"Unknown CUDA arch\"",
				 l.invalid.v[i]);
	for (size_t i = 0; i < l.n; i++)
		if (!l.v[i].known) {
			char b[32];
			finding_evidence(x, "'%s' is not a compute capability NVIDIA makes", arch_entry_text(&l.v[i], b, sizeof(b)));
		}
	static const char *const how[] = {"not covered", "only by PTX, JIT-compiled at the first start",
					  "by code for a lower minor version (runs, not tuned)", "covered"};
	for (int k = 0; k < ncc; k++)
		finding_evidence(x, "GPU compute capability %d.%d: %s", ccs[k][0], ccs[k][1],
				 how[arch_list_covers(&l, ccs[k][0], ccs[k][1])]);
	if (ncc) {
		strbuf v;
		sb_init(&v);
		for (int k = 0; k < ncc; k++)
			sb_addf(&v, "%s%d.%d", k ? ";" : "", ccs[k][0], ccs[k][1]);
		const char *q = ncc > 1 ? "\"" : ""; /* ';' needs quotes in a shell */
		finding_fix(x, "export TORCH_CUDA_ARCH_LIST=%s%s%s   (this machine's GPUs)", q, v.buf, q);
		finding_fix(x, "or export TORCH_CUDA_ARCH_LIST=%s%s+PTX%s   (also runs, JIT-compiled, on newer GPUs)", q, v.buf, q);
		sb_free(&v);
	} else {
		finding_fix(x, "use numbers like \"8.6\" or \"9.0+PTX\" separated by ';' (names: Ampere, Ada, Hopper, "
			       "Blackwell), or unset it to build for the visible GPUs");
	}
	finding_fix(x, "then rebuild the extension (pip install --no-build-isolation --force-reinstall --no-cache-dir "
		       "<package>)");
	free(shown);
	arch_list_free(&l);
}

/* ---- env.debug-vars --------------------------------------------------------------------- */

static void debug_vars(rule_ctx *c)
{
	const facts *f = c->facts;
	finding *x = NULL;
	int sev = -1;
	strbuf names;
	sb_init(&names);
	strlist lines = {0};
	for (const env_debug_var *d = env_debug_vars; d->name; d++) {
		char key[96] = "env.";
		size_t k = 4;
		for (const char *p = d->name; *p && k + 1 < sizeof(key); p++)
			key[k++] = (char)tolower((unsigned char)*p);
		key[k] = '\0';
		const char *v = facts_str(f, "%s", key);
		if (!env_debug_active(d, v))
			continue;
		char *sv = show(v);
		sl_pushf(&lines, "%s=%s: %s", d->name, sv, d->why);
		free(sv);
		sb_addf(&names, " %s", d->name);
		if (d->sev > sev)
			sev = d->sev;
	}
	if (lines.n) {
		x = rule_emit_sev(c, sev > 0 ? SEV_WARN : SEV_INFO, "%zu debugging or tuning variable%s set that slow%s or "
								 "change%s every run", lines.n, lines.n == 1 ? " is" : "s are",
				  lines.n == 1 ? "s" : "", lines.n == 1 ? "s" : "");
		for (size_t i = 0; i < lines.n; i++)
			finding_evidence(x, "%s", lines.v[i]);
		finding_fix(x, "unset%s   (for production runs; keep them to a debugging session)", names.buf);
		finding_fix(x, "look for them in ~/.bashrc, /etc/environment, the job script and the container image (ENV)");
	}
	sl_free(&lines);
	sb_free(&names);
}

/* ---- env.alloc-conf --------------------------------------------------------------------- */

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 48 || lb > 48)
		return 99;
	size_t d[49][49];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = d[i - 1][j - 1] + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
			size_t del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
			d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
	return d[la][lb];
}

/* "unknown option 'roundup_power2'" -> "roundup_power2_divisions" */
static const char *closest_key(const char *err)
{
	const char *q = strchr(err, '\'');
	if (!q || !str_starts(err, "unknown option"))
		return NULL;
	char word[64];
	size_t n = strcspn(q + 1, "'");
	if (n >= sizeof(word))
		return NULL;
	memcpy(word, q + 1, n);
	word[n] = '\0';
	const char *best = NULL;
	size_t bd = 99;
	for (size_t k = 0; alloc_conf_keys[k]; k++) {
		size_t dd = edit_distance(word, alloc_conf_keys[k]);
		if (str_starts(alloc_conf_keys[k], word) && n >= 6)
			dd = 1;
		if (dd < bd) {
			bd = dd;
			best = alloc_conf_keys[k];
		}
	}
	return bd <= 4 ? best : NULL;
}

static void alloc_conf_rule(rule_ctx *c)
{
	const facts *f = c->facts;
	static const char *const vars[] = {"PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"};
	static const char *const keys[] = {"env.pytorch_alloc_conf", "env.pytorch_cuda_alloc_conf"};
	finding *x = NULL;
	strlist notes = {0};
	for (size_t i = 0; i < 2; i++) {
		const char *raw = facts_str(f, "%s", keys[i]);
		if (!raw)
			continue;
		alloc_conf ac;
		bool ok = alloc_conf_parse(raw, &ac);
		if (!ok) {
			if (!x)
				x = rule_emit(c, "%s does not parse: PyTorch raises an error at its first CUDA allocation", vars[i]);
			char *sv = show(raw);
			finding_evidence(x, "%s=%s", vars[i], sv);
			free(sv);
			for (size_t e = 0; e < ac.errors.n; e++) {
				finding_evidence(x, "%s", ac.errors.v[e]);
				const char *guess = closest_key(ac.errors.v[e]);
				if (guess)
					finding_fix(x, "did you mean %s?", guess);
				if (strstr(ac.errors.v[e], "True or False"))
					finding_fix(x, "write True or False with a capital letter, e.g. expandable_segments:True");
			}
		}
		for (size_t e = 0; e < ac.notes.n; e++)
			sl_pushf(&notes, "%s: %s", vars[i], ac.notes.v[e]);
		alloc_conf_free(&ac);
	}
	const char *a = facts_str(f, "env.pytorch_alloc_conf"), *b = facts_str(f, "env.pytorch_cuda_alloc_conf");
	if (a && b && strcmp(a, b) != 0)
		sl_push(&notes, "both PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF are set and differ: newer PyTorch reads "
				"PYTORCH_ALLOC_CONF first, older releases know only PYTORCH_CUDA_ALLOC_CONF");
	if (!x && notes.n)
		x = rule_emit_sev(c, SEV_INFO, "the PyTorch allocator configuration has settings that do not apply");
	for (size_t i = 0; i < notes.n && x; i++)
		finding_evidence(x, "%s", notes.v[i]);
	if (x && x->sev != SEV_INFO) {
		strbuf k;
		sb_init(&k);
		for (size_t i = 0; alloc_conf_keys[i]; i++)
			sb_addf(&k, "%s%s", i ? ", " : "", alloc_conf_keys[i]);
		finding_fix(x, "the form is KEY:VALUE,KEY:VALUE; valid keys: %s (older PyTorch releases know fewer)", k.buf);
		finding_fix(x, "values: backend native|cudaMallocAsync; *_mb whole MiB (max_split_size_mb >= 20); "
			       "garbage_collection_threshold between 0 and 1; roundup_power2_divisions a power of 2 or "
			       "[256:1,512:2,>:8]; the rest True|False (pinned_num_register_threads a power of 2 up to 128)");
		finding_fix(x, "the common choice: export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
		sb_free(&k);
	}
	sl_free(&notes);
}

const rule rules_env[] = {
	{"env.visible-devices", "env", SEV_FAIL, "env.cuda_visible_devices", visible_devices,
	 "CUDA_VISIBLE_DEVICES empty, -1, out of range, unknown UUID, duplicated, or hiding every GPU", .root_cause = 13},
	{"env.device-order", "env", SEV_INFO, "env.cuda_device_order", device_order,
	 "CUDA's device numbering differs from nvidia-smi's (CUDA_DEVICE_ORDER unset)"},
	{"env.launch-blocking", "env", SEV_WARN, "env.cuda_launch_blocking", launch_blocking,
	 "CUDA_LAUNCH_BLOCKING=1 left set"},
	{"env.arch-list", "env", SEV_WARN, "env.torch_cuda_arch_list", arch_list_rule,
	 "TORCH_CUDA_ARCH_LIST lacks the GPUs' compute capability or has invalid entries"},
	{"env.debug-vars", "env", SEV_WARN, "env.cuda_visible_devices", debug_vars,
	 "CUDA/PyTorch/NCCL debugging or profiling variables left set"},
	{"env.alloc-conf", "env", SEV_WARN, "env.pytorch_cuda_alloc_conf", alloc_conf_rule,
	 "PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF does not parse"},
	{NULL, NULL, 0, NULL, NULL, NULL},
};
