/* Topology of GPUs and NICs (probes/topology.c): the PCI and NVLink paths between them. */
#ifndef GPUVET_PROBES_TOPOLOGY_H
#define GPUVET_PROBES_TOPOLOGY_H
#include "core/facts.h"

/* The path between two PCI functions from their sysfs device paths below /sys/devices
 * ("pci0000:17/0000:17:01.0/0000:18:00.0") and NUMA nodes (-1 unknown): "PIX", "PXB", "PHB",
 * "NODE" or "SYS"; NULL when a path is too short to say. */
const char *topology_pci_relation(const char *path_a, int numa_a, const char *path_b, int numa_b);
/* From the facts of every probe (topology.pci.*, nvml.gpu.N.pci_bus_id, nvml.gpu.N.nvlink.*):
 * topology.gpu.I.gpu.J, topology.gpu.I.nic.K, topology.gpu.I.numa_node, topology.nic.*. */
void topology_derive(facts *f);
/* For commands other than check (bench's P2P matrix): probes sysfs, NVML's bus ids and NVLink of
 * every GPU (NVML initialised, or initialised here) into f, then topology_derive. */
void topology_collect(facts *f);
#endif
