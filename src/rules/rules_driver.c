/*
 * Rules of the driver libraries: can NVML and libcuda be loaded, do they initialise (each error
 * code mapped to its cause), do they match the kernel module, what CUDA the driver supports,
 * persistence mode on datacenter GPUs.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/factkeys.h"
#include "kb/kb_nvidia.h"
#include "nvidia/cuda.h"
#include "nvidia/nvml.h"
#include "loader/loader.h"
#include "python/fixplan.h"
#include "rules/registry.h"
#include "rules/rules_nvidia.h"

static const char *fact_error(const fact *ft)
{
	return ft && ft->error ? ft->error : "unknown error";
}

/* The probe's supervised child hung, crashed or exited: driver.library-* says so, and the
 * facts it left (nvml.library, nvml.init as errors) must not read as "not installed". */
static bool child_failed(const facts *f, const char *probe)
{
	const char *o = facts_str(f, FK_ISOLATION_OUTCOME, probe);
	return o && strcmp(o, "ok") != 0 && strcmp(o, "not started") != 0; /* not started: it ran here */
}

/* No /proc/driver/nvidia/version at all (not: there but unreadable or garbled). */
static bool kernel_module_absent(const facts *f)
{
	const fact *ft = facts_get(f, FK_HARDWARE_KERNEL_MODULE_VERSION);
	return !ft || ft->state == FACT_ABSENT;
}

static bool library_missing(const facts *f, const char *key)
{
	const fact *ft = facts_get(f, "%s", key);
	return ft && ft->state != FACT_OK;
}

/* The user-space driver version and where it was read: NVML's answer, else the library file names. */
static const char *userspace_version(const facts *f, const char **from)
{
	const char *v;
	if ((v = facts_str(f, FK_NVML_DRIVER_VERSION))) {
		*from = "NVML (nvmlSystemGetDriverVersion)";
		return v;
	}
	if ((v = facts_str(f, FK_NVML_LIBRARY_FILE_VERSION))) {
		*from = "the libnvidia-ml file name";
		return v;
	}
	if ((v = facts_str(f, FK_CUDA_LIBRARY_FILE_VERSION))) {
		*from = "the libcuda file name";
		return v;
	}
	return NULL;
}

/* The fix lines for installing a missing driver library. */
static void fix_install_library(const facts *f, finding *x, const char *soname, const char *capability,
				const char *debian_pkg, const char *file_version_key)
{
	if (facts_true(f, FK_CONTAINER_INSIDE)) {
		finding_fix(x, "inside a container the NVIDIA runtime mounts %s only when NVIDIA_DRIVER_CAPABILITIES includes "
			       "%s: docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility ...",
			    soname, capability);
		return;
	}
	if (facts_true(f, FK_DEVICES_DXG)) {
		finding_fix(x, "WSL 2 provides %s in /usr/lib/wsl/lib: echo /usr/lib/wsl/lib | sudo tee "
			       "/etc/ld.so.conf.d/ld.wsl.conf && sudo ldconfig",
			    soname);
		return;
	}
	const char *file_ver = facts_str(f, "%s", file_version_key);
	if (file_ver) {
		/* libnvidia-ml.so.1 -> libnvidia-ml.so.580.159.04 */
		int stem = (int)(strlen(soname) - 1);
		finding_evidence(x, "%.*s%s exists in the driver library directories", stem, soname, file_ver);
		finding_fix(x, "the file is there but the loader does not find it: sudo ldconfig (check "
			       "/etc/ld.so.conf.d/ lists its directory)");
	}
	const char *kver = facts_str(f, FK_HARDWARE_KERNEL_MODULE_VERSION);
	char branch[16];
	nv_driver_branch(kver, branch, sizeof(branch));
	if (branch[0])
		finding_fix(x, "install the driver's libraries of the loaded kernel module %s: sudo apt install "
			       "libnvidia-compute-%s (Ubuntu) or sudo apt install %s (Debian); a runfile install: "
			       "rerun NVIDIA-Linux-x86_64-%s.run",
			    kver, branch, debian_pkg, kver);
	else
		finding_fix(x, "install the driver's libraries: sudo apt install libnvidia-compute-<branch> (Ubuntu) or "
			       "sudo apt install %s (Debian)",
			    debian_pkg);
}

/* A driver library that does not load (NVML's, libcuda's): its fact, the probe whose child loads
 * it, the finding's title, the variable that may choose the file, what fails without it, and
 * what fix_install_library needs. */
struct driver_lib {
	const char *key, *probe, *title, *env, *without, *soname, *component, *debian, *version_key;
};

static const struct driver_lib NVML_LIB = {
	FK_NVML_LIBRARY, "nvml", "the NVIDIA management library (libnvidia-ml.so.1) cannot be loaded", "GPUVET_NVML_LIB",
	"without it nvidia-smi, monitoring and every NVML-based tool fail", "libnvidia-ml.so.1", "utility",
	"libnvidia-ml1", FK_NVML_LIBRARY_FILE_VERSION,
};

static const struct driver_lib CUDA_LIB = {
	FK_CUDA_LIBRARY, "cudalib", "the CUDA driver library (libcuda.so.1) cannot be loaded: no CUDA program can run",
	"GPUVET_CUDA_LIB", "PyTorch reports torch.cuda.is_available() == False without it", "libcuda.so.1", "compute",
	"libcuda1", FK_CUDA_LIBRARY_FILE_VERSION,
};

static void driver_lib_missing(rule_ctx *c, const struct driver_lib *l)
{
	const facts *f = c->facts;
	if (!nv_driver_expected(f) || !library_missing(f, l->key) || child_failed(f, l->probe))
		return;
	const fact *ft = facts_get(f, "%s", l->key);
	finding *x = rule_emit(c, "%s", l->title);
	finding_evidence(x, "dlopen: %s", fact_error(ft));
	if (ft->source && strcmp(ft->source, l->env) == 0)
		finding_evidence(x, "%s chose the file", l->env);
	finding_evidence(x, "%s", l->without);
	fix_install_library(f, x, l->soname, l->component, l->debian, l->version_key);
	x->rank = 1;
}

static void nvml_missing(rule_ctx *c)
{
	driver_lib_missing(c, &NVML_LIB);
}

static void libcuda_missing(rule_ctx *c)
{
	driver_lib_missing(c, &CUDA_LIB);
}

static void version_mismatch(rule_ctx *c)
{
	const facts *f = c->facts;
	const char *kver = facts_str(f, FK_HARDWARE_KERNEL_MODULE_VERSION);
	const char *from = NULL;
	const char *uver = userspace_version(f, &from);
	long long nvml_rc = facts_int_or(f, 0, FK_NVML_INIT_CODE);
	long long cuda_rc = facts_int_or(f, 0, FK_CUDA_INIT_CODE);
	bool differ = kver && uver && version_cmp(kver, uver) != 0;
	bool nvml_says = nvml_rc == NVML_ERROR_LIB_RM_VERSION_MISMATCH;
	bool cuda_says = cuda_rc == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH && (differ || !kver || !uver);
	if (!differ && !nvml_says && !cuda_says)
		return;
	finding *x = rule_emit(c, "the loaded kernel module and the driver's user-space libraries are different "
				  "versions (\"Driver/library version mismatch\")");
	finding_evidence(x, "kernel module (/proc/driver/nvidia/version): %s", kver ? kver : "unknown");
	if (uver)
		finding_evidence(x, "user-space driver, from %s: %s", from, uver);
	if (nvml_says) {
		char readers[PATH_MAX + 160];
		finding_evidence(x, "nvmlInit: NVML_ERROR_LIB_RM_VERSION_MISMATCH (18)");
		finding_evidence(x, "%s", nv_nvml_readers(f, readers, sizeof(readers)));
	}
	if (cuda_rc == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)
		finding_evidence(x, "cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)");
	finding_evidence(x, "typical cause: the driver packages were upgraded (often by unattended-upgrades) and the "
			    "old module is still loaded");
	finding_fix(x, "reboot: the new kernel module%s%s loads at boot", uver ? " " : "", uver ? uver : "");
	finding_fix(x, "without a reboot (stop every GPU process and the display manager first): sudo systemctl stop "
		       "nvidia-persistenced; sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe "
		       "nvidia && sudo modprobe nvidia_uvm");
	char branch[16];
	nv_driver_branch(uver ? uver : kver, branch, sizeof(branch));
	if (branch[0])
		finding_fix(x, "keep it from happening again: sudo apt-mark hold nvidia-driver-%s libnvidia-compute-%s "
			       "(Ubuntu), or add the driver packages to Unattended-Upgrade::Package-Blacklist in "
			       "/etc/apt/apt.conf.d/50unattended-upgrades",
			    branch, branch);
	x->rank = 0;
}

/* A driver call's init error as evidence; when the probe's child timed out, the one fix for a hung
 * driver (the code is then not the cause) and true. */
static bool explain_init_hung(finding *x, const char *call, const fact *ft, bool timed_out, const char *hang_fix)
{
	finding_evidence(x, "%s: %s", call, fact_error(ft));
	if (timed_out)
		finding_fix(x, "%s", hang_fix);
	return timed_out;
}

/* A fix by error code: the first entry that lists the code, else the last one (the default). Zero
 * (success) ends an entry's codes. */
typedef struct {
	long long codes[2];
	const char *fix;
} code_fix;

static void fix_by_code(finding *x, const code_fix *t, size_t n, long long rc)
{
	size_t i = 0;
	while (i + 1 < n && t[i].codes[0] != rc && (!t[i].codes[1] || t[i].codes[1] != rc))
		i++;
	finding_fix(x, "%s", t[i].fix);
}

static const code_fix nvml_init_fixes[] = {
	{{NVML_ERROR_NO_PERMISSION},
	 "this user may not open /dev/nvidiactl and /dev/nvidia*: ls -l /dev/nvidia*; add the user to "
	 "the owning group (sudo usermod -aG video $USER, then log in again) or fix the udev rule"},
	{{NVML_ERROR_OPERATING_SYSTEM},
	 "the operating system blocked the GPU device nodes (cgroup device rules of a container or "
	 "systemd unit): recreate the container with --gpus all, or allow the nvidia devices "
	 "(DeviceAllow=/dev/nvidia* rw)"},
	{{NVML_ERROR_GPU_IS_LOST},
	 "a GPU fell off the bus (look for Xid 79: sudo journalctl -k | grep -i xid): power cycle "
	 "the machine; reseat the GPU or RMA it if it repeats"},
	{{NVML_ERROR_RESET_REQUIRED}, "a GPU needs a reset: sudo nvidia-smi -r (no process may use it), or reboot"},
	{{NVML_ERROR_INSUFFICIENT_POWER},
	 "a GPU's external power cables are not connected properly: check them with the machine "
	 "powered off"},
	{{NVML_ERROR_IRQ_ISSUE},
	 "the kernel saw an interrupt problem with a GPU: check `sudo dmesg | grep -i nvrm`; try "
	 "the kernel option pci=nommconf or a BIOS update"},
	{{NVML_ERROR_CORRUPTED_INFOROM},
	 "a GPU's infoROM is corrupted: contact the vendor (RMA); the GPU may still work with "
	 "reduced features"},
	{{NVML_ERROR_UNKNOWN},
	 "an internal driver error: reload the driver (sudo rmmod nvidia_uvm nvidia_drm "
	 "nvidia_modeset nvidia && sudo modprobe nvidia nvidia_uvm) or reboot; see `sudo dmesg | "
	 "grep -i nvrm`"},
	{{0}, "see `sudo dmesg | grep -i nvrm` for the driver's own message; reinstalling the driver "
	    "or a reboot clears most initialisation failures"},
};

/* cuInit's codes whose fix is a sentence alone; the others need facts (explain_cuda's switch) */
static const code_fix cuda_init_fixes[] = {
	{{CUDA_ERROR_INSUFFICIENT_DRIVER, CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER},
	 "upgrade the NVIDIA driver (see driver.cuda-max for what this one supports), or use a "
	 "CUDA build that this driver runs"},
	{{CUDA_ERROR_NOT_PERMITTED, CUDA_ERROR_OPERATING_SYSTEM},
	 "check the permissions of /dev/nvidia* and /dev/nvidia-uvm (ls -l /dev/nvidia*); in a "
	 "container, its device rules: start it with --gpus all"},
	{{CUDA_ERROR_SYSTEM_NOT_READY},
	 "on an NVSwitch system the fabric manager must run before CUDA: sudo systemctl enable "
	 "--now nvidia-fabricmanager (see gpu.fabric-manager)"},
	{{CUDA_ERROR_SYSTEM_DRIVER_MISMATCH},
	 "the libcuda in use does not fit the kernel module: reboot after a driver upgrade, or "
	 "remove a cuda-compat directory from LD_LIBRARY_PATH / ld.so.conf"},
	{{CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE},
	 "forward-compatibility libcuda (cuda-compat) runs only on datacenter GPUs: remove its "
	 "directory (e.g. /usr/local/cuda/compat) from LD_LIBRARY_PATH and ld.so.conf"},
	{{0}, "see `sudo dmesg | grep -i nvrm`; a driver reinstall or a reboot clears most "
	    "initialisation failures"},
};

/* NVML's init error: cause and fix by code. */
static void explain_nvml(const facts *f, finding *x, long long rc)
{
	if (explain_init_hung(x, "nvmlInit", facts_get(f, FK_NVML_INIT), facts_true(f, FK_NVML_TIMEOUT),
			      "the driver hangs (nvidia-smi makes the same nvmlInit call): look for Xid errors (sudo journalctl -k | "
			      "grep -i xid; Xid 79 means a GPU fell off the bus) and reboot the machine"))
		return;
	fix_by_code(x, nvml_init_fixes, GV_ARRAY_LEN(nvml_init_fixes), rc);
}

/* cuInit's error: cause and fix by code. */
static void explain_cuda(const facts *f, finding *x, long long rc)
{
	if (explain_init_hung(x, "cuInit", facts_get(f, FK_CUDA_INIT), facts_true(f, FK_CUDA_TIMEOUT),
			      "the driver hangs: look for Xid errors (sudo journalctl -k | grep -i xid) and stuck GPU "
			      "processes (nvidia-smi), then reboot the machine"))
		return;
	const char *cause = gv_cuda_result_cause((CUresult)rc);
	if (cause)
		finding_evidence(x, "likely cause: %s", cause);
	int n = nv_gpu_count(f);
	switch (rc) {
	case CUDA_ERROR_UNKNOWN:
		finding_fix(x, "after a suspend/resume the unified memory module is often stuck: sudo rmmod nvidia_uvm "
			       "&& sudo modprobe nvidia_uvm (stop GPU processes first), or reboot");
		if (!facts_true(f, FK_HARDWARE_MODULE, "nvidia_uvm"))
			finding_evidence(x, "nvidia_uvm is not listed in /proc/modules");
		break;
	case CUDA_ERROR_NO_DEVICE: {
		const char *cvd = facts_str(f, FK_CUDA_VISIBLE_DEVICES);
		if (cvd) {
			finding_evidence(x, "CUDA_VISIBLE_DEVICES=\"%s\" while NVML sees %d GPU(s)", cvd, n);
			finding_fix(x, "CUDA_VISIBLE_DEVICES hides the GPUs: unset CUDA_VISIBLE_DEVICES, or set it to "
				       "indexes below %d (e.g. export CUDA_VISIBLE_DEVICES=0)",
				    n > 0 ? n : 1);
		} else if (n > 0) {
			finding_evidence(x, "NVML sees %d GPU(s) but CUDA none", n);
			finding_fix(x, "check that this user can open /dev/nvidia-uvm and /dev/nvidia0..%d (ls -l /dev/nvidia*), "
				       "and, in a container, that it was started with --gpus all",
				    n - 1);
		} else {
			finding_fix(x, "no GPU is visible: in a container start it with --gpus all; on a host check "
				       "`nvidia-smi -L`");
		}
		break;
	}
	case CUDA_ERROR_STUB_LIBRARY: {
		const char *lib = facts_str(f, FK_CUDA_LIBRARY);
		if (lib)
			finding_evidence(x, "libcuda loaded from %s", lib);
		finding_fix(x, "remove the toolkit's stubs directory (.../lib64/stubs) from LD_LIBRARY_PATH: it holds a "
			       "link-time placeholder, not the driver");
		const char *llp = facts_str(f, FK_LOADER_LD_LIBRARY_PATH);
		char *rest = llp ? loader_path_without_stubs(llp) : NULL;
		if (rest && strcmp(rest, llp) != 0) {
			if (*rest)
				finding_fix_export(x, "LD_LIBRARY_PATH", rest, NULL);
			else
				finding_fix_unset(x, "LD_LIBRARY_PATH", NULL);
		}
		free(rest);
		break;
	}
	case CUDA_ERROR_DEVICE_UNAVAILABLE:
		for (int i = 0; i < n; i++) {
			const char *mode = facts_str(f, FK_NVML_GPU_COMPUTE_MODE(d), i);
			long long procs = facts_int_or(f, 0, FK_NVML_GPU_PROCESSES_COUNT(d), i);
			if (mode && strcmp(mode, "default") != 0) {
				char label[160];
				finding_evidence(x, "%s is in %s compute mode with %lld process(es) on it",
						 nv_gpu_label(f, i, label, sizeof(label)), mode, procs);
			}
		}
		finding_fix(x, "the GPU is exclusive to another process (or prohibited): wait for it, pick a free GPU "
			       "with CUDA_VISIBLE_DEVICES, or (admin) sudo nvidia-smi -c DEFAULT");
		break;
	default:
		fix_by_code(x, cuda_init_fixes, GV_ARRAY_LEN(cuda_init_fixes), rc);
	}
}

static void init_failed(rule_ctx *c)
{
	const facts *f = c->facts;
	/* without a driver to talk to, init failing is a consequence that the hardware rules explain */
	if (!nv_driver_expected(f))
		return;
	const fact *ni = facts_get(f, FK_NVML_INIT);
	const fact *ci = facts_get(f, FK_CUDA_INIT);
	long long nrc = facts_int_or(f, 0, FK_NVML_INIT_CODE);
	long long crc = facts_int_or(f, 0, FK_CUDA_INIT_CODE);
	bool nvml_bad = ni && ni->state == FACT_ERROR && !child_failed(f, "nvml") && nrc != NVML_ERROR_LIB_RM_VERSION_MISMATCH &&
			!(nrc == NVML_ERROR_DRIVER_NOT_LOADED && kernel_module_absent(f) &&
			  !facts_true(f, FK_DEVICES_DXG));
	/* 803 is the version mismatch when the versions differ: driver.version-mismatch says it */
	const char *from;
	const char *uver = userspace_version(f, &from);
	const char *kver = facts_str(f, FK_HARDWARE_KERNEL_MODULE_VERSION);
	bool cuda_mismatch_explained =
		crc == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH && (!kver || !uver || version_cmp(kver, uver) != 0);
	bool cuda_bad = ci && ci->state == FACT_ERROR && !cuda_mismatch_explained && !child_failed(f, "cuda") &&
			!child_failed(f, "cudalib") &&
			(nrc != NVML_ERROR_LIB_RM_VERSION_MISMATCH);
	if (!nvml_bad && !cuda_bad)
		return;
	finding *x;
	if (nvml_bad && cuda_bad)
		x = rule_emit(c, "the driver does not initialise: nvmlInit and cuInit both fail");
	else if (nvml_bad)
		x = rule_emit(c, "NVML does not initialise: nvmlInit fails");
	else
		x = rule_emit(c, "cuInit fails: no CUDA program can use the GPU");
	if (nvml_bad)
		explain_nvml(f, x, nrc);
	if (cuda_bad)
		explain_cuda(f, x, crc);
	x->rank = 1;
}

static void cuda_max(rule_ctx *c)
{
	const facts *f = c->facts;
	const char *dfrom;
	/* the user-space driver answers cuDriverGetVersion; the kernel module only when nothing else is known */
	const char *dver = userspace_version(f, &dfrom);
	const char *cv = facts_str(f, FK_NVML_CUDA_VERSION);
	char buf[32], kbv[32];
	long long cd;
	const char *from = "NVML";
	if (!cv && facts_int(f, &cd, FK_CUDA_DRIVER_VERSION) && cd > 0) {
		snprintf(buf, sizeof(buf), "%lld.%lld", cd / 1000, (cd % 1000) / 10);
		cv = buf;
		from = "cuDriverGetVersion";
	}
	if (!dver)
		dver = facts_str(f, FK_HARDWARE_KERNEL_MODULE_VERSION);
	if (!cv && dver && c->kb && kb_driver_max_cuda(c->kb, dver, kbv, sizeof(kbv))) {
		cv = kbv;
		from = "the knowledge base (driver version table)";
	}
	if (!cv)
		return;
	finding *x = dver ? rule_emit(c, "driver %s supports CUDA up to %s", dver, cv)
			  : rule_emit(c, "the driver supports CUDA up to %s", cv);
	finding_evidence(x, "maximum CUDA version from %s: %s", from, cv);
	finding_evidence(x, "CUDA runtimes (PyTorch wheels, toolkits) up to %s run with this driver; newer ones need "
			    "a driver upgrade or, on datacenter GPUs, the cuda-compat package",
			 cv);
}

static void persistence_off(rule_ctx *c)
{
	const facts *f = c->facts;
	finding *x = NULL;
	int off = 0, n = nv_gpu_count(f);
	int last = -1;
	for (int i = 0; i < n; i++) {
		const fact *p = facts_get(f, FK_NVML_GPU_PERSISTENCE(d), i);
		if (!p || p->state != FACT_OK || p->i)
			continue;
		const char *name = facts_str(f, FK_NVML_GPU_NAME(d), i);
		if (!kb_gpu_is_datacenter(c->kb, name))
			continue;
		if (!x)
			x = rule_emit(c, "persistence mode is off on datacenter GPUs");
		char label[160];
		finding_evidence(x, "%s: persistence mode off", nv_gpu_label(f, i, label, sizeof(label)));
		off++;
		last = i;
	}
	if (!x)
		return;
	finding_evidence(x, "without it the driver tears the GPU state down whenever no process uses it: every "
			    "start pays the initialisation again (cuInit seconds instead of a fraction) and ECC/clock "
			    "settings may reset");
	finding_fix(x, "sudo systemctl enable --now nvidia-persistenced");
	if (off == 1 && n > 1)
		finding_fix(x, "or, until the next reboot: sudo nvidia-smi -i %d -pm 1", last);
	else
		finding_fix(x, "or, until the next reboot: sudo nvidia-smi -pm 1");
}

/* ---- driver.arch-unsupported: a GPU this driver cannot drive at all (gpu_arch_driver.csv) ---- */

static void arch_unsupported(rule_ctx *c)
{
	fix_machine m;
	fix_machine_read(c->facts, c->kb, &m);
	if (!m.driver[0])
		return;
	finding *x = NULL;
	for (int i = 0; i < m.ngpus; i++) {
		const fix_gpu *g = &m.gpus[i];
		char why[200];
		if (!g->cc[0] || kb_driver_drives(c->kb, m.driver, g->major, g->minor, why, sizeof(why)) != 0)
			continue;
		if (!x) {
			kb_arch_driver a;
			kb_arch_driver_lookup(c->kb, g->major, g->minor, &a);
			x = rule_emit(c, "driver %s cannot drive the %s (%s): the fix is the driver, not a PyTorch wheel", m.driver,
				      g->name, a.architecture);
			x->rank = 0;
			finding_evidence(x, "%s", why);
		}
		finding_evidence(x, "GPU %d: %s, compute capability %s (from %s)", i, g->name, g->cc,
				 g->cc_source ? g->cc_source : "?");
	}
	if (m.refused[0]) {
		/* the driver refused a GPU NVML therefore never lists: known only from the kernel log */
		if (!x) {
			x = rule_emit(c, "driver %s cannot drive a GPU here (it says so in the kernel log): the fix is the "
					 "driver, not a PyTorch wheel", m.driver);
			x->rank = 0;
		}
		finding_evidence(x, "%s", m.refused);
	}
	if (!x)
		return;
	fix_choice ch;
	fix_choose(c->kb, &m, &ch);
	if (ch.driver_branch_max) {
		finding_fix(x, "install the R%d driver, the last branch that drives this GPU: sudo apt install "
			       "nvidia-driver-%d (Ubuntu; on Debian the nvidia-tesla-%d-driver package), then reboot",
			    ch.driver_branch_max, ch.driver_branch_max, ch.driver_branch_max);
	} else if (ch.driver_need[0]) {
		finding_fix(x, "upgrade the NVIDIA driver to >= %s (branch %.3s or newer: the newest PyTorch for this GPU "
			       "needs it too), then reboot", ch.driver_need, ch.driver_need);
		finding_fix(x, "Ubuntu: sudo apt install nvidia-driver-%.3s; NVIDIA's CUDA repository: sudo apt install "
			       "cuda-drivers", ch.driver_need);
	} else {
		finding_fix(x, "upgrade the NVIDIA driver to one that drives this GPU (data/gpu_arch_driver.csv), then reboot");
	}
	finding_fix(x, "then `gpuvet fix` prints the PyTorch build for the new driver");
}

const rule rules_driver[] = {
	{"driver.version-mismatch", "driver", SEV_FAIL, FK_NVML_LIBRARY, version_mismatch,
	 "the kernel module and the user-space driver libraries are different versions", .root_cause = 7},
	{"driver.nvml-missing", "driver", SEV_FAIL, FK_NVML_LIBRARY, nvml_missing,
	 "libnvidia-ml.so.1 cannot be loaded"},
	{"driver.libcuda-missing", "driver", SEV_FAIL, FK_CUDA_LIBRARY, libcuda_missing,
	 "libcuda.so.1 cannot be loaded", .root_cause = 6},
	{"driver.init-failed", "driver", SEV_FAIL, FK_NVML_LIBRARY, init_failed,
	 "nvmlInit or cuInit fails; the cause of each error code", .root_cause = 12},
	{"driver.cuda-max", "driver", SEV_INFO, FK_NVML_LIBRARY, cuda_max,
	 "the newest CUDA version this driver supports"},
	{"driver.persistence-off", "driver", SEV_WARN, FK_NVML_INIT, persistence_off,
	 "persistence mode off on datacenter GPUs"},
	{"driver.arch-unsupported", "driver", SEV_FAIL, FK_HARDWARE_PCI_COUNT, arch_unsupported,
	 "the driver is too old (or, for a dropped architecture, too new) to drive a GPU here"},
	{NULL, NULL, 0, NULL, NULL, NULL},
};
