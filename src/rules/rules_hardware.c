/* Rules of the hardware layer: is there an NVIDIA GPU, and is a working kernel driver bound. */
#include <errno.h>
#include <string.h>

#include "core/shell.h"
#include "rules/registry.h"

static int pci_count(const facts *f)
{
	return (int)facts_int_or(f, 0, "hardware.pci.count");
}

#define VERSION_FILE "/proc/driver/nvidia/version"

/* Something is at /proc/driver/nvidia/version, even when it could not be read or understood:
 * only a file that is not there means "no module loaded". */
static bool driver_proc_present(const facts *f)
{
	const fact *ft = facts_get(f, "hardware.kernel_module_version");
	return ft && ft->state != FACT_ABSENT;
}

/* The PCI tree was read whole: a bus that cannot be listed, or functions whose vendor cannot be
 * read, may hide a GPU, so "no GPU" is not concluded from it. */
static bool pci_fully_seen(const facts *f)
{
	const fact *ft = facts_get(f, "hardware.pci.count");
	return !fact_seen_but_unknown(ft) && facts_int_or(f, 0, "hardware.pci.unreadable") == 0;
}

/* GPUs can also reach us without PCI functions: WSL 2 (/dev/dxg) and NVML that answers. */
static bool gpu_seen_elsewhere(const facts *f)
{
	return facts_int_or(f, 0, "nvml.device_count") > 0 || facts_true(f, "devices.dxg");
}

static void gpu_none(rule_ctx *c)
{
	const facts *f = c->facts;
	if (pci_count(f) > 0 || driver_proc_present(f) || gpu_seen_elsewhere(f) || !pci_fully_seen(f))
		return;
	/* the driver's nodes are there and /proc/devices shows its major (a container with /sys and
	 * /proc/driver masked, or nodes that are not the driver's: dev.wrong-node): the GPU is not
	 * absent, other rules name what is wrong. Stale nodes without a registered driver do not count. */
	long long major;
	if ((facts_true(f, "devices.nvidiactl") || facts_int_or(f, 0, "devices.gpu.present") > 0) &&
	    facts_int(f, &major, "devices.major.nvidia"))
		return;
	if (facts_true(f, "container.inside") && !facts_true(f, "devices.dxg"))
		return; /* container.no-gpu names this case, with the container's own fix */
	if (facts_int_or(f, 0, "container.wsl") == 1)
		return; /* wsl.v1 is the cause: WSL 1 cannot reach a GPU at all */
	finding *x = rule_emit(c, "no NVIDIA GPU is visible on this machine");
	finding_evidence(x, "no PCI display device with vendor 0x10de under /sys/bus/pci/devices");
	finding_evidence(x, VERSION_FILE " does not exist");
	if (facts_int_or(f, 0, "nvml.device_count") == 0 && facts_get(f, "nvml.device_count"))
		finding_evidence(x, "NVML reports no devices");
	finding_fix(x, "if this machine should have a GPU: check that it is seated and powered, and listed by "
		       "`lspci -nn | grep -i nvidia`");
	finding_fix(x, "a cloud instance needs a GPU instance type");
	finding_fix(x, "to run on the CPU meanwhile: device = \"cuda\" if torch.cuda.is_available() else \"cpu\", "
		       "and expect training 10-100x slower; use a smaller batch size");
	x->rank = 0;
}

static void driver_not_loaded(rule_ctx *c)
{
	const facts *f = c->facts;
	if (pci_count(f) == 0 || driver_proc_present(f))
		return;
	for (int i = 0; i < pci_count(f); i++) {
		const char *drv = facts_str(f, "hardware.pci.%d.driver", i);
		if (drv && strcmp(drv, "nouveau") == 0)
			return; /* driver.nouveau explains it */
	}
	finding *x = rule_emit(c, "an NVIDIA GPU is present but the NVIDIA kernel driver is not loaded");
	for (int i = 0; i < pci_count(f); i++)
		finding_evidence(x, "PCI %s (device %s): driver %s", facts_str(f, "hardware.pci.%d.address", i),
				 facts_str(f, "hardware.pci.%d.device_id", i) ? facts_str(f, "hardware.pci.%d.device_id", i) : "?",
				 facts_str(f, "hardware.pci.%d.driver", i) ? facts_str(f, "hardware.pci.%d.driver", i) : "none");
	finding_evidence(x, VERSION_FILE " does not exist");
	const char *release = facts_str(f, "hardware.kernel_release");
	const char *modfile = facts_str(f, "hardware.module_file");
	if (modfile) {
		finding_evidence(x, "module file for the running kernel: %s", modfile);
		if (facts_true(f, "hardware.secure_boot")) {
			finding_evidence(x, "Secure Boot is enabled: an unsigned module is refused at load time");
			finding_fix(x, "enroll the DKMS signing key: sudo mokutil --import /var/lib/dkms/mok.pub, reboot and "
				       "complete the enrollment; or disable Secure Boot in the firmware");
		}
		finding_fix(x, "load it: sudo modprobe nvidia && sudo modprobe nvidia-uvm; see `sudo dmesg | grep -i nvrm` "
			       "if it fails");
	} else {
		finding_evidence(x, "no nvidia.ko under /lib/modules/%s", release ? release : "(unknown kernel)");
		if (facts_str(f, "hardware.dkms_module"))
			finding_fix(x, "rebuild the DKMS module for this kernel: sudo dkms autoinstall -k %s",
				    release ? shell_word_or_comment((char[512]){0}, 512, "the kernel release", release)
					    : "$(uname -r)");
		else {
			finding_fix(x, "Ubuntu: sudo ubuntu-drivers install");
			/* Debian's nvidia-driver is in non-free, which a default install (and debootstrap)
			 * leaves out: `apt install nvidia-driver` alone says "Unable to locate package" */
			finding_fix(x, "Debian: nvidia-driver is in non-free: add \"contrib non-free\" after \"main\" in "
				       "/etc/apt/sources.list (or to Components: in /etc/apt/sources.list.d/debian.sources), "
				       "then: sudo apt update && sudo apt install nvidia-driver firmware-misc-nonfree");
		}
		if (release)
			finding_fix(x, "kernel headers are needed to build it: sudo apt install linux-headers-%s",
				    shell_word_or_comment((char[512]){0}, 512, "the kernel release", release));
	}
	finding_fix(x, "then reboot");
	x->rank = 0;
}

static void driver_nouveau(rule_ctx *c)
{
	const facts *f = c->facts;
	bool bound = false;
	finding *x = NULL;
	for (int i = 0; i < pci_count(f); i++) {
		const char *drv = facts_str(f, "hardware.pci.%d.driver", i);
		if (drv && strcmp(drv, "nouveau") == 0) {
			if (!x)
				x = rule_emit(c, "the open-source nouveau driver holds the GPU, so the NVIDIA driver cannot");
			finding_evidence(x, "PCI %s is bound to nouveau", facts_str(f, "hardware.pci.%d.address", i));
			bound = true;
		}
	}
	if (facts_true(f, "hardware.module.nouveau")) {
		if (!x)
			x = rule_emit(c, "the nouveau module is loaded and will conflict with the NVIDIA driver");
		finding_evidence(x, "nouveau is listed in /proc/modules");
	}
	if (!x)
		return;
	(void)bound;
	finding_fix(x, "printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' | sudo tee "
		       "/etc/modprobe.d/blacklist-nouveau.conf");
	finding_fix(x, "sudo update-initramfs -u   (dracut: sudo dracut --force)");
	finding_fix(x, "sudo reboot");
	x->rank = 0;
}

/* Something is at /proc/driver/nvidia/version but it does not say which driver is loaded: a
 * directory, a FIFO, a file gpuvet may not read, or one whose text is not the module's. The
 * absent-case advice (install the driver, reboot) would be wrong: the module, or something
 * mounted over its file, is there. */
static void driver_proc_unreadable(rule_ctx *c)
{
	const facts *f = c->facts;
	const fact *ft = facts_get(f, "hardware.kernel_module_version");
	if (!ft || (!fact_seen_but_unknown(ft) && ft->state != FACT_ERROR))
		return;
	char what[512];
	fact_problem_text(ft, what, sizeof(what));
	finding *x = rule_emit(c, "%s is there but does not say which NVIDIA driver is loaded", VERSION_FILE);
	finding_evidence(x, "%s %s", VERSION_FILE, what);
	const char *nver = facts_str(f, "nvml.driver_version");
	if (nver)
		finding_evidence(x, "NVML answers with driver %s", nver);
	if (pci_count(f) > 0)
		finding_evidence(x, "%d NVIDIA GPU%s on the PCI bus", pci_count(f), pci_count(f) == 1 ? "" : "s");
	if (ft->state == FACT_UNREADABLE && (ft->sys_errno == EACCES || ft->sys_errno == EPERM)) {
		finding_fix(x, "the kernel makes this file readable by everyone: see who restricted it with "
			       "`ls -l " VERSION_FILE "` and `findmnt -T " VERSION_FILE "` (a security profile, a container "
			       "runtime), or run gpuvet as root to compare");
	} else {
		finding_fix(x, "the NVIDIA kernel module writes one line starting \"NVRM version:\" there; something else is in "
			       "its place: look with `ls -l " VERSION_FILE "` and `findmnt -T " VERSION_FILE "` (a bind "
			       "mount or a file left by a container image build)");
		finding_fix(x, "if the module is really loaded, `cat /sys/module/nvidia/version` shows its version");
	}
	finding_fix(x, "gpuvet does not conclude that the driver is missing: reinstalling it would not change this file");
	x->rank = 0;
}

const rule rules_hardware[] = {
	{"gpu.none", "hardware", SEV_FAIL, "hardware.pci.count", gpu_none,
	 "no NVIDIA GPU on the PCI bus and no NVIDIA driver", .root_cause = 1},
	{"driver.not-loaded", "hardware", SEV_FAIL, "hardware.pci.count", driver_not_loaded,
	 "an NVIDIA GPU is present but the kernel driver is not loaded", .root_cause = 3},
	{"driver.nouveau", "hardware", SEV_FAIL, "hardware.pci.count", driver_nouveau,
	 "nouveau is bound to the GPU or loaded", .root_cause = 2},
	{"driver.proc-unreadable", "hardware", SEV_WARN, "hardware.kernel_module_version", driver_proc_unreadable,
	 "/proc/driver/nvidia/version is there but cannot be read or is not the module's text"},
	{NULL, NULL, 0, NULL, NULL, NULL},
};
