/* Topology from sysfs paths and NVML bus ids (any bytes: a machine's sysfs links, a recorded
 * facts file): the PCI path between two devices, and the matrix derived from facts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/facts.h"
#include "probes/topology.h"

static const char *const answers[] = {"PIX", "PXB", "PHB", "NODE", "SYS"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* "PATH_A\nPATH_B\nBUS_A\nBUS_B\nNUMA_A NUMA_B" */
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	char *part[5] = {"", "", "", "", ""};
	char *p = text;
	for (int i = 0; i < 5 && p; i++) {
		part[i] = p;
		p = strchr(p, '\n');
		if (p)
			*p++ = '\0';
	}
	int na = atoi(part[4]), nb = part[4][0] ? atoi(part[4] + strcspn(part[4], " ")) : 0;
	const char *r = topology_pci_relation(part[0], na, part[1], nb);
	if (r) {
		bool known = false;
		for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++)
			known |= strcmp(r, answers[i]) == 0;
		if (!known)
			__builtin_trap();
	}
	facts *f = facts_new();
	facts_put_int(f, NULL, 2, "nvml.device_count");
	facts_put_str(f, NULL, part[2], "nvml.gpu.0.pci_bus_id");
	facts_put_str(f, NULL, part[3], "nvml.gpu.1.pci_bus_id");
	facts_put_int(f, NULL, 2, "topology.pci.count");
	for (int k = 0; k < 2; k++) {
		facts_put_str(f, NULL, part[2 + k], "topology.pci.%d.bus_id", k);
		facts_put_str(f, NULL, k ? "nic" : "gpu", "topology.pci.%d.kind", k);
		facts_put_str(f, NULL, part[k], "topology.pci.%d.path", k);
		facts_put_int(f, NULL, k ? nb : na, "topology.pci.%d.numa_node", k);
	}
	facts_put_int(f, NULL, 1, "nvml.gpu.0.nvlink.count");
	facts_put_str(f, NULL, "active", "nvml.gpu.0.nvlink.0.state");
	facts_put_str(f, NULL, part[3], "nvml.gpu.0.nvlink.0.remote_bus_id");
	topology_derive(f);
	facts_free(f);
	free(text);
	return 0;
}
