/*
 * Rules of the supervised children (core/child.h): a vendor library that hung, crashed, ended
 * the process or printed on stdout while a probe's child loaded or called it (isolation.NAME.*
 * facts, NAME the probe), and NVML calls that fail on a machine whose PCI tree has NVIDIA GPUs.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/factkeys.h"
#include "rules/registry.h"
#include "rules/rules_nvidia.h"

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every probe NAME with an isolation.NAME.outcome fact, in name order (children end in any
 * order): listed once a run, for the four rules below (a walk of every fact each, 0.18 ms of
 * check --fast on an H100). */
static const strlist *child_names(rule_ctx *c)
{
	rules_memo *m = c->memo;
	strlist *names = &m->children;
	if (m->children_listed)
		return names;
	size_t count;
	const fact **all = facts_list(c->facts, &count);
	for (size_t i = 0; i < count; i++) {
		const fact *ft = all[i];
		if (strncmp(ft->key, "isolation.", 10) != 0 || !str_ends(ft->key, ".outcome") || ft->state != FACT_OK || !ft->str)
			continue;
		size_t n = strlen(ft->key) - strlen("isolation.") - strlen(".outcome");
		if (n > 0 && n < 64)
			sl_push_owned(names, xstrndup(ft->key + strlen("isolation."), n));
	}
	free(all);
	if (names->n > 1)
		qsort(names->v, names->n, sizeof(*names->v), name_cmp);
	m->children_listed = true;
	return names;
}

/* Calls fn for every child of child_names, once per library file (printed: the file that
 * printed): the cudalib and cuda probes load the same libcuda. */
static void each_child(rule_ctx *c, bool printed, void (*fn)(rule_ctx *c, const char *name, const char *outcome))
{
	const facts *f = c->facts;
	const strlist *names = child_names(c);
	strlist files = {0};
	for (size_t i = 0; i < names->n; i++) {
		const char *file = facts_str(f, printed ? FK_ISOLATION_STDOUT_FILE : FK_ISOLATION_FILE, names->v[i]);
		if (file && sl_contains(&files, file))
			continue;
		size_t before = c->out->n;
		fn(c, names->v[i], facts_str(f, FK_ISOLATION_OUTCOME, names->v[i]));
		if (file && c->out->n > before)
			sl_push(&files, file);
	}
	sl_free(&files);
}

/* "libnvidia-ml.so.1", else "the nvml probe's library"; printed: the library that printed */
static const char *lib_of(const facts *f, const char *name, bool printed, char *buf, size_t size)
{
	const char *lib = facts_str(f, printed ? FK_ISOLATION_STDOUT_LIBRARY : FK_ISOLATION_LIBRARY, name);
	if (lib && *lib)
		return lib;
	snprintf(buf, size, "a library of the %s probe", name);
	return buf;
}

static void evidence_where(const facts *f, finding *x, const char *name)
{
	const char *file = facts_str(f, FK_ISOLATION_FILE, name);
	const char *call = facts_str(f, FK_ISOLATION_CALL, name);
	bool in_call = facts_true(f, FK_ISOLATION_IN_CALL, name);
	if (file)
		finding_evidence(x, "file: %s", file);
	if (call)
		finding_evidence(x, "%s %s%s", in_call ? "it was in" : "its last finished call was", call,
				 strcmp(call, "dlopen") == 0 && in_call ? " (loading: its constructors run there, before any call)"
									  : "");
	finding_evidence(x, "gpuvet ran it in a supervised child process (the %s probe), so the rest of this "
			    "diagnosis is complete",
			 name);
}

/* Where the file came from, and the reinstall line of the driver's libraries. */
static void fix_reinstall(const facts *f, finding *x, const char *name)
{
	const char *file = facts_str(f, FK_ISOLATION_FILE, name);
	if (file)
		finding_fix(x, "find the package that owns it: dpkg -S %s (Debian, Ubuntu) or rpm -qf %s", file, file);
	char branch[16];
	nv_driver_branch(facts_str(f, FK_HARDWARE_KERNEL_MODULE_VERSION), branch, sizeof(branch));
	if (strcmp(name, "nvml") == 0 || strcmp(name, "cuda") == 0 || strcmp(name, "cudalib") == 0) {
		if (branch[0])
			finding_fix(x, "reinstall the driver's user-space libraries: sudo apt install --reinstall "
				       "libnvidia-compute-%s (Ubuntu), or rerun the driver's .run installer",
				    branch);
		else
			finding_fix(x, "reinstall the driver's user-space libraries (libnvidia-compute-<branch> on Ubuntu, "
				       "libnvidia-ml1 and libcuda1 on Debian, or the driver's .run installer)");
	} else {
		finding_fix(x, "reinstall the package that owns the file, or remove the stray copy from the loader's path "
			       "(LD_LIBRARY_PATH, /etc/ld.so.conf.d/) and run sudo ldconfig");
	}
}

static void hung_one(rule_ctx *c, const char *name, const char *outcome)
{
	if (strcmp(outcome, "hung") != 0)
		return;
	const facts *f = c->facts;
	char buf[96];
	const char *lib = lib_of(f, name, false, buf, sizeof(buf));
	const char *call = facts_str(f, FK_ISOLATION_CALL, name);
	double limit = 0;
	facts_real(f, &limit, FK_ISOLATION_LIMIT_SECONDS, name);
	finding *x = rule_emit(c, "%s hangs%s%s in gpuvet's child: every program that loads it runs the same code", lib,
			       call ? " in " : "", call ? call : "");
	evidence_where(f, x, name);
	finding_evidence(x, "it did not answer within %.0f s and was killed (GPUVET_DRIVER_TIMEOUT sets the limit)", limit);
	if (call && strcmp(call, "dlopen") != 0) {
		finding_fix(x, "a driver call that never returns means a wedged driver or GPU: look for Xid errors (sudo "
			       "journalctl -k | grep -i xid) and processes stuck in D state (ps -eo pid,stat,cmd | awk "
			       "'$2 ~ /D/'), then reboot the machine");
	} else {
		finding_fix(x, "a library that blocks while loading is damaged or not the driver's: check what it waits for "
			       "(timeout 10 strace -f -e trace=file,futex,ioctl nvidia-smi), and whether the file is the "
			       "installed driver's");
		fix_reinstall(f, x, name);
	}
	x->rank = 0;
}

static void library_hung(rule_ctx *c)
{
	each_child(c, false, hung_one);
}

static void crashed_one(rule_ctx *c, const char *name, const char *outcome)
{
	if (strcmp(outcome, "crashed") != 0)
		return;
	const facts *f = c->facts;
	char buf[96];
	const char *lib = lib_of(f, name, false, buf, sizeof(buf));
	const char *call = facts_str(f, FK_ISOLATION_CALL, name);
	const char *sig = facts_str(f, FK_ISOLATION_SIGNAL, name);
	const char *sigtext = facts_str(f, FK_ISOLATION_SIGNAL_TEXT, name);
	finding *x = rule_emit(c, "%s crashes with %s (%s)%s%s in gpuvet's child: every program that loads it runs the "
				  "same code", lib,
			       sig ? sig : "a signal", sigtext ? sigtext : "?", call ? " in " : "", call ? call : "");
	evidence_where(f, x, name);
	long long have = 0, claim = 0;
	if (facts_int(f, &have, FK_ISOLATION_FILE_BYTES, name) && facts_int(f, &claim, FK_ISOLATION_FILE_ELF_BYTES, name))
		finding_evidence(x, "the file is %lld bytes but its ELF headers describe %lld: it is truncated (a "
				    "half-written driver upgrade, a full disk, a copy cut short)",
				 have, claim);
	else if (sig && strcmp(sig, "SIGBUS") == 0)
		finding_evidence(x, "SIGBUS while loading usually means the file is shorter than it claims, or was "
				    "overwritten while mapped (a driver upgrade under running programs)");
	fix_reinstall(f, x, name);
	x->rank = 0;
}

static void library_crashed(rule_ctx *c)
{
	each_child(c, false, crashed_one);
}

static void exited_one(rule_ctx *c, const char *name, const char *outcome)
{
	if (strcmp(outcome, "exited") != 0)
		return;
	const facts *f = c->facts;
	char buf[96];
	const char *lib = lib_of(f, name, false, buf, sizeof(buf));
	const char *call = facts_str(f, FK_ISOLATION_CALL, name);
	long long st = facts_int_or(f, -1, FK_ISOLATION_EXIT_STATUS, name);
	finding *x = rule_emit(c, "%s ends the program that loads it (exit status %lld%s%s)", lib, st, call ? " in " : "",
			       call ? call : "");
	evidence_where(f, x, name);
	if (st == 0)
		finding_evidence(x, "status 0 with no output: a CI gate or script running a tool that loads this "
				    "library reads it as success");
	fix_reinstall(f, x, name);
	x->rank = 0;
}

static void library_exited(rule_ctx *c)
{
	each_child(c, false, exited_one);
}

static void prints_one(rule_ctx *c, const char *name, const char *outcome)
{
	(void)outcome;
	const facts *f = c->facts;
	const char *text = facts_str(f, FK_ISOLATION_STDOUT, name);
	if (!text)
		return;
	char buf[96];
	const char *lib = lib_of(f, name, true, buf, sizeof(buf));
	const char *call = facts_str(f, FK_ISOLATION_STDOUT_CALL, name);
	const char *file = facts_str(f, FK_ISOLATION_STDOUT_FILE, name);
	finding *x = rule_emit(c, "%s prints on standard output%s%s: \"%.80s\"", lib,
			       call && strcmp(call, "dlopen") == 0 ? " when it is loaded" : call ? " in " : "",
			       call && strcmp(call, "dlopen") != 0 ? call : "", text);
	if (file)
		finding_evidence(x, "file: %s", file);
	finding_evidence(x, "%lld byte(s) on fd 1; a program's own output (JSON, CSV, `eval` lines) gets this text "
			    "mixed in. gpuvet kept it out of its own output (the %s probe's child)",
			 facts_int_or(f, 0, FK_ISOLATION_STDOUT_BYTES, name), name);
	if (strstr(text, "stub") || (file && strstr(file, "/stubs/"))) {
		finding_evidence(x, "this is the CUDA toolkit's link-time stub, not the real library: programs that load "
				    "it get no GPU work done");
		finding_fix(x, "remove the toolkit's stubs directory (.../lib64/stubs, .../lib/stubs) from LD_LIBRARY_PATH "
			       "and /etc/ld.so.conf.d/, then sudo ldconfig");
	} else {
		fix_reinstall(f, x, name);
	}
}

static void library_prints(rule_ctx *c)
{
	each_child(c, true, prints_one);
}

/* NVML initialised but cannot count or open the GPUs that the PCI tree shows. */
static void nvml_failed(rule_ctx *c)
{
	const facts *f = c->facts;
	long long pci = facts_int_or(f, 0, FK_HARDWARE_PCI_COUNT);
	if (pci <= 0 && !nv_driver_expected(f))
		return;
	const fact *cnt = facts_get(f, FK_NVML_DEVICE_COUNT_ERROR);
	int n = nv_gpu_count(f);
	finding *x = NULL;
	if (cnt && cnt->state == FACT_ERROR) {
		x = rule_emit(c, "NVML initialises but cannot count the GPUs: no GPU can be monitored or checked");
		finding_evidence(x, "nvmlDeviceGetCount: %s", cnt->error ? cnt->error : "unknown error");
	}
	for (int i = 0; i < n; i++) {
		const fact *name = facts_get(f, FK_NVML_GPU_NAME(d), i);
		if (!name || name->state != FACT_ERROR || !name->source ||
		    strcmp(name->source, "nvmlDeviceGetHandleByIndex") != 0)
			continue;
		if (!x)
			x = rule_emit(c, "NVML cannot open %s of the GPUs it counts", n == 1 ? "the one" : "some");
		finding_evidence(x, "nvmlDeviceGetHandleByIndex(%d): %s", i, name->error ? name->error : "unknown error");
	}
	/* NVML answers for fewer GPUs than the nvidia driver has bound (a GPU that fell off, one the
	 * driver failed to initialise). Not in a container: its sysfs shows the host's GPUs. */
	const fact *nc = facts_get(f, FK_NVML_DEVICE_COUNT);
	int bound = 0;
	for (long long i = 0; i < pci && i < 256; i++) {
		const char *drv = facts_str(f, FK_HARDWARE_PCI_DRIVER(lld), i);
		bound += drv && strcmp(drv, "nvidia") == 0;
	}
	if (nc && nc->state == FACT_OK && n < bound && !facts_true(f, FK_CONTAINER_INSIDE)) {
		if (!x)
			x = rule_emit(c, "NVML sees %d of the %d GPUs the nvidia driver has on the PCI bus", n, bound);
		finding_evidence(x, "nvmlDeviceGetCount: %d", n);
		for (long long i = 0; i < pci && i < 256; i++) {
			const char *drv = facts_str(f, FK_HARDWARE_PCI_DRIVER(lld), i);
			const char *addr = facts_str(f, FK_HARDWARE_PCI_ADDRESS(lld), i);
			if (!drv || strcmp(drv, "nvidia") != 0 || !addr)
				continue;
			bool seen = false;
			for (int g = 0; g < n && !seen; g++) {
				const char *bus = facts_str(f, FK_NVML_GPU_PCI_BUS_ID(d), g);
				size_t la = strlen(addr), lb = bus ? strlen(bus) : 0;
				/* NVML: 00000000:18:00.0, sysfs: 0000:18:00.0 */
				seen = bus && lb >= la && strcasecmp(bus + lb - la, addr) == 0;
			}
			if (!seen)
				finding_evidence(x, "%s is bound to nvidia but NVML does not list it", addr);
		}
		finding_fix(x, "look for the GPU's Xid in the kernel log (sudo journalctl -k | grep -i -e xid -e nvrm): "
			       "Xid 79 means it fell off the bus");
	}
	if (!x)
		return;
	if (pci > 0)
		finding_evidence(x, "the PCI tree shows %lld NVIDIA GPU(s)%s", pci,
				 n > 0 ? "" : "; NVML answers none of them");
	char readers[PATH_MAX + 160];
	finding_evidence(x, "%s", nv_nvml_readers(f, readers, sizeof(readers)));
	finding_fix(x, "see the driver's own message: sudo dmesg | grep -i -e nvrm -e xid; a GPU that fell off the bus "
		       "(Xid 79) or a driver error needs a reboot (or sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset "
		       "nvidia && sudo modprobe nvidia nvidia_uvm with no GPU process running)");
	x->rank = 1;
}

const rule rules_isolation[] = {
	{"driver.library-hung", "driver", SEV_FAIL, "", library_hung,
	 "a vendor library hangs while loaded or called (killed in gpuvet's supervised child)"},
	{"driver.library-crashed", "driver", SEV_FAIL, "", library_crashed,
	 "a vendor library crashes (SIGSEGV, SIGBUS of a truncated file) while loaded or called"},
	{"driver.library-exited", "driver", SEV_FAIL, "", library_exited,
	 "a vendor library ends the process that loads it (exit() in a constructor)"},
	{"driver.library-prints", "driver", SEV_WARN, "", library_prints,
	 "a vendor library prints on standard output (the stub cuBLASLt), which corrupts programs' output"},
	{"driver.nvml-failed", "driver", SEV_FAIL, FK_NVML_INIT, nvml_failed,
	 "NVML initialises but nvmlDeviceGetCount or nvmlDeviceGetHandleByIndex fails, or it sees fewer GPUs than the nvidia driver has bound"},
	{NULL, NULL, 0, NULL, NULL, NULL},
};
