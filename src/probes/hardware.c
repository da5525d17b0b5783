/*
 * Hardware and kernel driver: NVIDIA PCI functions and the driver bound to each, the kernel
 * module's version (/proc/driver/nvidia/version), loaded modules, the module file for the
 * running kernel, Secure Boot.
 *
 * Facts: hardware.*  (see docs/facts.md)
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/factkeys.h"
#include "core/sysroot.h"
#include "probes/probes.h"

#define PCI_DIR "/sys/bus/pci/devices"

/* A hex number from a sysfs file; !*ok with errno from the read (ENOENT: no such file), or EINVAL
 * when the file says something else. */
static unsigned long read_hex_file(const char *path, bool *ok)
{
	char *line = sysroot_read_line(path);
	*ok = false;
	if (!line)
		return 0;
	char *end;
	errno = 0;
	unsigned long v = strtoul(line, &end, 16);
	*ok = errno == 0 && end != line;
	free(line);
	if (!*ok)
		errno = EINVAL;
	return v;
}

static void probe_pci(facts *f)
{
	strlist names = {0};
	int rc = sysroot_list_dir(PCI_DIR, 4096, &names);
	if (rc != 0) {
		/* an unreadable bus is not an empty one: no count, so no rule concludes "no GPU" */
		facts_put_read_error(f, PCI_DIR, rc, "no PCI bus in sysfs", FK_HARDWARE_PCI_COUNT);
		return;
	}
	int count = 0, unreadable = 0;
	for (size_t i = 0; i < names.n; i++) {
		char path[512];
		bool ok;
		snprintf(path, sizeof(path), PCI_DIR "/%s/vendor", names.v[i]);
		unsigned long vendor = read_hex_file(path, &ok);
		if (!ok && errno != ENOENT && errno != ENOTDIR) {
			/* a function whose vendor cannot be read may be a GPU: counted, never taken for "not NVIDIA" */
			if (!unreadable++)
				facts_put_str(f, path, path, FK_HARDWARE_PCI_UNREADABLE_FIRST);
			continue;
		}
		if (!ok || vendor != 0x10de)
			continue;
		snprintf(path, sizeof(path), PCI_DIR "/%s/class", names.v[i]);
		unsigned long cls = read_hex_file(path, &ok);
		/* display controllers (0x03xxxx): VGA 0x0300, 3D 0x0302; audio and bridges are not GPUs */
		if (!ok || (cls >> 16) != 0x03)
			continue;
		snprintf(path, sizeof(path), PCI_DIR "/%s/device", names.v[i]);
		unsigned long device = read_hex_file(path, &ok);
		facts_put_str(f, PCI_DIR, names.v[i], FK_HARDWARE_PCI_ADDRESS(d), count);
		if (ok) {
			char hex[16];
			snprintf(hex, sizeof(hex), "0x%04lx", device & 0xffff);
			facts_put_str(f, path, hex, FK_HARDWARE_PCI_DEVICE_ID(d), count);
		}
		char cls_hex[16];
		snprintf(cls_hex, sizeof(cls_hex), "0x%06lx", cls & 0xffffff);
		facts_put_str(f, PCI_DIR, cls_hex, FK_HARDWARE_PCI_CLASS(d), count);
		snprintf(path, sizeof(path), PCI_DIR "/%s/driver", names.v[i]);
		char *target = sysroot_readlink(path);
		if (target) {
			const char *base = strrchr(target, '/');
			facts_put_str(f, path, base ? base + 1 : target, FK_HARDWARE_PCI_DRIVER(d), count);
			free(target);
		} else {
			facts_put_str(f, path, "none", FK_HARDWARE_PCI_DRIVER(d), count);
		}
		count++;
	}
	sl_free(&names);
	facts_put_int(f, PCI_DIR, count, FK_HARDWARE_PCI_COUNT);
	facts_put_int(f, PCI_DIR, unreadable, FK_HARDWARE_PCI_UNREADABLE);
}

/* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu ..." -> "580.159.04"
 * (also "Open Kernel Module for x86_64  580.95.05  Release Build ..."). */
static bool parse_nvrm_version(const char *text, char *out, size_t n, bool *open_module)
{
	const char *line = strstr(text, "NVRM version:");
	if (!line)
		return false;
	const char *eol = strchr(line, '\n');
	size_t len = eol ? (size_t)(eol - line) : strlen(line);
	char *l = xstrndup(line, len);
	*open_module = strstr(l, "Open Kernel Module") != NULL;
	bool found = false;
	strlist words = {0};
	sl_split(&words, l, " \t", false);
	for (size_t i = 0; i < words.n && !found; i++) {
		int a, b, c;
		const char *w = words.v[i];
		if (isdigit((unsigned char)w[0]) && version_parse(w, &a, &b, &c) >= 2 && strchr(w, '.') && a >= 100) {
			str_copy(out, n, w);
			found = true;
		}
	}
	sl_free(&words);
	free(l);
	return found;
}

static void probe_kernel_module(facts *f)
{
	const char *vpath = "/proc/driver/nvidia/version";
	char *text = NULL;
	size_t len = 0;
	int rc = sysroot_read(vpath, 64 * 1024, &text, &len, NULL);
	if (rc < 0) {
		/* absent only when nothing is there; a directory, a FIFO or EACCES is there but unreadable */
		facts_put_read_error(f, vpath, rc, "no NVIDIA kernel module loaded", FK_HARDWARE_KERNEL_MODULE_VERSION);
	} else {
		char ver[64];
		bool open_module = false;
		if (parse_nvrm_version(text, ver, sizeof(ver), &open_module)) {
			facts_put_str(f, vpath, ver, FK_HARDWARE_KERNEL_MODULE_VERSION);
			facts_put_bool(f, vpath, open_module, FK_HARDWARE_KERNEL_MODULE_OPEN);
		} else {
			facts_put_unparsable(f, vpath, text, len, "no \"NVRM version:\" line with a driver version",
					     FK_HARDWARE_KERNEL_MODULE_VERSION);
		}
	}
	free(text);

	const char *mpath = "/proc/modules";
	static const char *const mods[] = {"nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm", "nouveau"};
	rc = sysroot_read(mpath, 4 << 20, &text, NULL, NULL);
	if (rc < 0) {
		for (size_t i = 0; i < GV_ARRAY_LEN(mods); i++)
			facts_put_read_error(f, mpath, rc, "no /proc/modules", FK_HARDWARE_MODULE, mods[i]);
	} else {
		for (size_t i = 0; i < GV_ARRAY_LEN(mods); i++) {
			bool loaded = false;
			size_t ml = strlen(mods[i]);
			for (const char *p = text; p && *p;) {
				if (strncmp(p, mods[i], ml) == 0 && p[ml] == ' ')
					loaded = true;
				p = strchr(p, '\n');
				if (p)
					p++;
			}
			facts_put_bool(f, mpath, loaded, FK_HARDWARE_MODULE, mods[i]);
		}
		free(text);
	}
}

/* Looks for nvidia.ko* of the running kernel in the usual places (distro, DKMS, runfile). */
static void probe_module_file(facts *f)
{
	char *release = sysroot_read_line("/proc/sys/kernel/osrelease");
	if (!release) {
		facts_put_read_error(f, "/proc/sys/kernel/osrelease", -errno, NULL, FK_HARDWARE_KERNEL_RELEASE);
		facts_put_state(f, FACT_ABSENT, "/proc/sys/kernel/osrelease", "kernel release unknown", FK_HARDWARE_MODULE_FILE);
		return;
	}
	facts_put_str(f, "/proc/sys/kernel/osrelease", release, FK_HARDWARE_KERNEL_RELEASE);
	static const char *const dirs[] = {"updates/dkms", "kernel/drivers/video", "extra", "updates", "kernel/nvidia",
					   "misc", "kernel/drivers/gpu/drm/nouveau"};
	static const char *const names[] = {"nvidia.ko", "nvidia.ko.xz", "nvidia.ko.zst", "nvidia.ko.gz"};
	bool found = false;
	for (size_t i = 0; i < GV_ARRAY_LEN(dirs) - 1 && !found; i++)
		for (size_t j = 0; j < GV_ARRAY_LEN(names) && !found; j++) {
			char p[512];
			snprintf(p, sizeof(p), "/lib/modules/%s/%s/%s", release, dirs[i], names[j]);
			if (sysroot_exists(p)) {
				facts_put_str(f, p, p, FK_HARDWARE_MODULE_FILE);
				found = true;
			}
		}
	if (!found) {
		char p[512];
		snprintf(p, sizeof(p), "/lib/modules/%s", release);
		facts_put_state(f, FACT_ABSENT, p, "no nvidia.ko for the running kernel", FK_HARDWARE_MODULE_FILE);
	}
	char dkms[512];
	snprintf(dkms, sizeof(dkms), "/var/lib/dkms");
	DIR *d = sysroot_opendir(dkms);
	if (d) {
		struct dirent *de;
		strlist found_mods = {0};
		while ((de = readdir(d)))
			if (str_starts(de->d_name, "nvidia"))
				sl_push(&found_mods, de->d_name);
		closedir(d);
		if (found_mods.n)
			facts_put_str(f, dkms, found_mods.v[0], FK_HARDWARE_DKMS_MODULE);
		sl_free(&found_mods);
	}
	free(release);
}

static void probe_secure_boot(facts *f)
{
	const char *sb = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c";
	char *data = NULL;
	size_t len = 0;
	int rc = sysroot_read(sb, 64, &data, &len, NULL);
	if (rc < 0) {
		facts_put_state(f, sysroot_exists("/sys/firmware/efi") ? FACT_ERROR : FACT_ABSENT, sb,
				rc == -ENOENT ? "not an EFI system or variable not readable" : strerror(-rc),
				FK_HARDWARE_SECURE_BOOT);
	} else if (len >= 5) { /* 4 bytes of attributes, then the value */
		facts_put_bool(f, sb, data[4] == 1, FK_HARDWARE_SECURE_BOOT);
	} else {
		facts_put_unparsable(f, sb, data, len, "an EFI variable of at least 5 bytes", FK_HARDWARE_SECURE_BOOT);
	}
	free(data);
}

void probe_hardware(facts *f, const probe_opts *o)
{
	(void)o;
	probe_pci(f);
	probe_kernel_module(f);
	probe_module_file(f);
	probe_secure_boot(f);
}
