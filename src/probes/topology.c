/*
 * Topology: where GPUs and NICs sit in the PCI tree (sysfs), and from that and NVLink the path
 * between each pair, as `nvidia-smi topo -m` names them:
 *
 *	NV#   connected by # active NVLink links (directly, or each through NVSwitches)
 *	PIX   through at most one PCIe switch (no host bridge)
 *	PXB   through several PCIe switches (no host bridge)
 *	PHB   through a PCIe host bridge (the CPU's root complex)
 *	NODE  between host bridges of one NUMA node
 *	SYS   across NUMA nodes (the CPUs' interconnect, QPI/UPI/Infinity Fabric)
 *
 * probe_topology reads sysfs only (facts topology.pci.*); topology_derive is pure over facts and
 * runs after every probe (it needs NVML's bus ids and NVLink): topology.gpu.*, topology.nic.*.
 *
 * Facts: topology.*  (docs/facts/nvidia.md)
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/factkeys.h"
#include "core/sysroot.h"
#include "nvidia/nvml.h"
#include "probes/probes.h"
#include "probes/topology.h"

#define PCI_DIR "/sys/bus/pci/devices"
#define TOPO_MAX_DEV 256
#define TOPO_MAX_LINKS 18

static bool read_hex(const char *path, unsigned long *out)
{
	char *line = sysroot_read_line(path);
	if (!line)
		return false;
	char *end;
	errno = 0;
	*out = strtoul(line, &end, 16);
	bool ok = errno == 0 && end != line;
	free(line);
	return ok;
}

/* The first entry of DIR (a NIC's infiniband/ folder) into buf. */
static bool first_entry(const char *dir, char *buf, size_t size)
{
	strlist names = {0};
	bool ok = sysroot_list_dir(dir, 64, &names) == 0 && names.n > 0;
	if (ok) {
		str_copy(buf, size, names.v[0]);
		str_sanitize(buf);
	}
	sl_free(&names);
	return ok;
}

void probe_topology(facts *f, const probe_opts *o)
{
	(void)o;
	strlist names = {0};
	int rc = sysroot_list_dir(PCI_DIR, 4096, &names);
	if (rc != 0) {
		facts_put_read_error(f, PCI_DIR, rc, "no PCI bus in sysfs", FK_TOPOLOGY_PCI_COUNT);
		return;
	}
	int count = 0;
	for (size_t i = 0; i < names.n && count < TOPO_MAX_DEV; i++) {
		char path[512];
		unsigned long vendor = 0, cls = 0;
		snprintf(path, sizeof(path), PCI_DIR "/%s/vendor", names.v[i]);
		if (!read_hex(path, &vendor))
			continue; /* the hardware probe reports functions it cannot read */
		snprintf(path, sizeof(path), PCI_DIR "/%s/class", names.v[i]);
		if (!read_hex(path, &cls))
			continue;
		const char *kind = NULL;
		char rdma[128] = "";
		if (vendor == 0x10de && (cls >> 16) == 0x03) {
			kind = "gpu";
		} else if ((cls >> 8) == 0x0200 || (cls >> 8) == 0x0207) {
			/* Ethernet or InfiniBand, and RDMA-capable (an infiniband/ device: IB or RoCE), as
			 * nvidia-smi topo -m lists them: only those take part in GPUDirect RDMA */
			snprintf(path, sizeof(path), PCI_DIR "/%s/infiniband", names.v[i]);
			if (first_entry(path, rdma, sizeof(rdma)))
				kind = "nic";
		}
		if (!kind)
			continue;
		int k = count++;
		facts_put_str(f, PCI_DIR, names.v[i], FK_TOPOLOGY_PCI_BUS_ID(d), k);
		facts_put_str(f, PCI_DIR, kind, FK_TOPOLOGY_PCI_KIND(d), k);
		snprintf(path, sizeof(path), PCI_DIR "/%s", names.v[i]);
		char *real = sysroot_realpath(path);
		if (real) {
			/* "/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0" -> from "pci0000:17" on */
			if (strncmp(real, "/sys/devices/", strlen("/sys/devices/")) == 0)
				facts_put_str(f, path, real + strlen("/sys/devices/"), FK_TOPOLOGY_PCI_PATH(d), k);
			else /* a directory, not the kernel's link into the device tree: no path to tell */
				facts_put_state(f, FACT_ABSENT, path, "not a link into /sys/devices", FK_TOPOLOGY_PCI_PATH(d), k);
			free(real);
		} else {
			facts_put_read_error(f, path, -errno, "the device's link does not resolve", FK_TOPOLOGY_PCI_PATH(d), k);
		}
		snprintf(path, sizeof(path), PCI_DIR "/%s/numa_node", names.v[i]);
		char *numa = sysroot_read_line(path);
		if (numa) {
			char *end;
			long v = strtol(numa, &end, 10);
			if (end != numa)
				facts_put_int(f, path, v, FK_TOPOLOGY_PCI_NUMA_NODE(d), k);
			else
				facts_put_unparsable(f, path, numa, strlen(numa), "a number", FK_TOPOLOGY_PCI_NUMA_NODE(d), k);
			free(numa);
		} else {
			facts_put_read_error(f, path, -errno, "no NUMA information (a kernel without NUMA)",
					     FK_TOPOLOGY_PCI_NUMA_NODE(d), k);
		}
		if (rdma[0]) {
			snprintf(path, sizeof(path), PCI_DIR "/%s/infiniband", names.v[i]);
			facts_put_str(f, path, rdma, FK_TOPOLOGY_PCI_NAME(d), k);
		}
	}
	sl_free(&names);
	facts_put_int(f, PCI_DIR, count, FK_TOPOLOGY_PCI_COUNT);
	/* how many NUMA nodes the kernel knows: with one, a device's numa_node of -1 means node 0
	 * (what nvidia-smi topo -m shows as its NUMA affinity) */
	DIR *nd = sysroot_opendir("/sys/devices/system/node");
	if (nd) {
		long long nodes = 0;
		struct dirent *e;
		while ((e = readdir(nd)))
			if (strncmp(e->d_name, "node", 4) == 0 && isdigit((unsigned char)e->d_name[4]))
				nodes++;
		closedir(nd);
		facts_put_int(f, "/sys/devices/system/node", nodes, FK_TOPOLOGY_NUMA_NODES);
	}
}

/* ---- paths ---- */

/* "00000000:18:00.0" (NVML) and "0000:18:00.0" (sysfs) name the same function */
static bool bus_id_equal(const char *a, const char *b)
{
	if (!a || !b)
		return false;
	if (strlen(a) == 16 && strncmp(a, "0000", 4) == 0)
		a += 4;
	if (strlen(b) == 16 && strncmp(b, "0000", 4) == 0)
		b += 4;
	return strcasecmp(a, b) == 0;
}

/* Splits "pci0000:17/0000:17:01.0/0000:18:00.0" into its components (at most max). */
static int split_path(const char *path, char parts[][32], int max)
{
	int n = 0;
	const char *p = path;
	while (*p && n < max) {
		size_t len = strcspn(p, "/");
		if (len > 0 && len < 32) {
			memcpy(parts[n], p, len);
			parts[n][len] = '\0';
			n++;
		}
		p += len;
		if (*p == '/')
			p++;
	}
	return n;
}

const char *topology_pci_relation(const char *path_a, int numa_a, const char *path_b, int numa_b)
{
	char a[24][32], b[24][32];
	int na = split_path(path_a, a, 24), nb = split_path(path_b, b, 24);
	if (na < 2 || nb < 2)
		return NULL;
	if (strcmp(a[0], b[0]) != 0) /* different host bridges (pciDDDD:BB) */
		return numa_a >= 0 && numa_b >= 0 && numa_a != numa_b ? "SYS" : "NODE";
	/* components 1..n-1 are the bridges down to the device itself (the last one) */
	int common = 0;
	while (common + 1 < na - 1 && common + 1 < nb - 1 && strcmp(a[common + 1], b[common + 1]) == 0)
		common++;
	if (common == 0)
		return "PHB"; /* separate root ports: through the host bridge */
	/* bridges below the common one on each side: a PCIe switch is an upstream port with its
	 * downstream ports, so one switch leaves at most one bridge on each side */
	int below = (na - 2 - common) + (nb - 2 - common);
	return below <= 2 ? "PIX" : "PXB";
}

/* The topology.pci index of the bus id, or -1. */
static int pci_index(const facts *f, const char *bus)
{
	long long n = facts_int_or(f, 0, FK_TOPOLOGY_PCI_COUNT);
	for (long long k = 0; k < n && k < TOPO_MAX_DEV; k++)
		if (bus_id_equal(facts_str(f, FK_TOPOLOGY_PCI_BUS_ID(lld), k), bus))
			return (int)k;
	return -1;
}

/* Active links of GPU i that lead to the GPU at bus (directly), and to NVSwitches. */
static void nvlinks(const facts *f, int i, const char *bus, int *direct, int *switched)
{
	*direct = *switched = 0;
	long long n = facts_int_or(f, 0, FK_NVML_GPU_NVLINK_COUNT(d), i);
	for (long long l = 0; l < n && l < TOPO_MAX_LINKS; l++) {
		const char *st = facts_str(f, FK_NVML_GPU_NVLINK_STATE(d, lld), i, l);
		if (!st || strcmp(st, "active") != 0)
			continue;
		const char *rt = facts_str(f, FK_NVML_GPU_NVLINK_REMOTE_TYPE(d, lld), i, l);
		if (rt && strcmp(rt, "nvswitch") == 0)
			(*switched)++;
		else if (bus_id_equal(facts_str(f, FK_NVML_GPU_NVLINK_REMOTE_BUS_ID(d, lld), i, l), bus))
			(*direct)++;
	}
}

static int numa_of(const facts *f, int k)
{
	return k < 0 ? -1 : (int)facts_int_or(f, -1, FK_TOPOLOGY_PCI_NUMA_NODE(d), k);
}

void topology_derive(facts *f)
{
	long long ngpu = facts_int_or(f, 0, FK_NVML_DEVICE_COUNT);
	if (ngpu > 64)
		ngpu = 64;
	long long npci = facts_int_or(f, 0, FK_TOPOLOGY_PCI_COUNT);
	int gpu_pci[64];
	for (int i = 0; i < ngpu; i++) {
		gpu_pci[i] = pci_index(f, facts_str(f, FK_NVML_GPU_PCI_BUS_ID(d), i));
		if (gpu_pci[i] >= 0 && facts_int(f, &(long long){0}, FK_TOPOLOGY_PCI_NUMA_NODE(d), gpu_pci[i])) {
			int node = numa_of(f, gpu_pci[i]);
			long long nodes = facts_int_or(f, -1, FK_TOPOLOGY_NUMA_NODES);
			if (node < 0 && nodes == 1) /* no NUMA information on a one-node machine: node 0 */
				facts_put_int(f, "sysfs numa_node -1 on a machine with one NUMA node", 0, FK_TOPOLOGY_GPU_NUMA_NODE(d), i);
			else
				facts_put_int(f, "sysfs numa_node", node, FK_TOPOLOGY_GPU_NUMA_NODE(d), i);
		}
	}
	const char *src = "sysfs PCI tree, NVLink";
	for (int i = 0; i < ngpu; i++)
		for (int j = 0; j < ngpu; j++) {
			if (i == j)
				continue;
			const char *bj = facts_str(f, FK_NVML_GPU_PCI_BUS_ID(d), j);
			int di, si, dj, sj;
			nvlinks(f, i, bj, &di, &si);
			nvlinks(f, j, facts_str(f, FK_NVML_GPU_PCI_BUS_ID(d), i), &dj, &sj);
			char nv[16];
			if (di > 0) {
				snprintf(nv, sizeof(nv), "NV%d", di);
				facts_put_str(f, src, nv, FK_TOPOLOGY_GPU_GPU(d, d), i, j);
				continue;
			}
			if (si > 0 && sj > 0) {
				/* through the NVSwitches: each GPU's links to the fabric, the smaller side */
				snprintf(nv, sizeof(nv), "NV%d", si < sj ? si : sj);
				facts_put_str(f, src, nv, FK_TOPOLOGY_GPU_GPU(d, d), i, j);
				continue;
			}
			const char *pa = gpu_pci[i] >= 0 ? facts_str(f, FK_TOPOLOGY_PCI_PATH(d), gpu_pci[i]) : NULL;
			const char *pb = gpu_pci[j] >= 0 ? facts_str(f, FK_TOPOLOGY_PCI_PATH(d), gpu_pci[j]) : NULL;
			const char *rel = pa && pb ? topology_pci_relation(pa, numa_of(f, gpu_pci[i]), pb, numa_of(f, gpu_pci[j]))
						   : NULL;
			if (rel)
				facts_put_str(f, src, rel, FK_TOPOLOGY_GPU_GPU(d, d), i, j);
		}
	int nic = 0;
	for (long long k = 0; k < npci && k < TOPO_MAX_DEV; k++) {
		const char *kind = facts_str(f, FK_TOPOLOGY_PCI_KIND(lld), k);
		if (!kind || strcmp(kind, "nic") != 0)
			continue;
		int n = nic++;
		const char *bus = facts_str(f, FK_TOPOLOGY_PCI_BUS_ID(lld), k);
		const char *name = facts_str(f, FK_TOPOLOGY_PCI_NAME(lld), k);
		facts_put_str(f, "sysfs", bus, FK_TOPOLOGY_NIC_BUS_ID(d), n);
		if (name)
			facts_put_str(f, "sysfs", name, FK_TOPOLOGY_NIC_NAME(d), n);
		const char *pn = facts_str(f, FK_TOPOLOGY_PCI_PATH(lld), k);
		for (int i = 0; i < ngpu; i++) {
			const char *pg = gpu_pci[i] >= 0 ? facts_str(f, FK_TOPOLOGY_PCI_PATH(d), gpu_pci[i]) : NULL;
			const char *rel = pg && pn ? topology_pci_relation(pg, numa_of(f, gpu_pci[i]), pn, numa_of(f, (int)k))
						   : NULL;
			if (rel)
				facts_put_str(f, src, rel, FK_TOPOLOGY_GPU_NIC(d, d), i, n);
		}
	}
	if (npci > 0 || ngpu > 0)
		facts_put_int(f, "sysfs", nic, FK_TOPOLOGY_NIC_COUNT);
}

void topology_collect(facts *f)
{
	probe_topology(f, NULL);
	unsigned n = 0;
	if (gv_nvml_device_count(&n) != NVML_SUCCESS)
		return;
	if (n > 64)
		n = 64;
	facts_put_int(f, "nvmlDeviceGetCount", n, FK_NVML_DEVICE_COUNT);
	gv_nvml_device *d = xcalloc(1, sizeof(*d));
	for (unsigned i = 0; i < n; i++) {
		gv_nvml_device_clear(d);
		if (gv_nvml_device_snapshot(i, GV_NVML_IDENTITY, d) == NVML_SUCCESS && GV_OK(d->pci_bus_id))
			facts_put_str(f, "nvmlDeviceGetPciInfo", d->pci_bus_id.v, FK_NVML_GPU_PCI_BUS_ID(u), i);
		probe_nvlink_gpu(f, (int)i);
	}
	free(d);
	topology_derive(f);
}
