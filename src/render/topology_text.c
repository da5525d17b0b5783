/* check's text: the topology matrix, as `nvidia-smi topo -m` prints it (facts topology.*). */
#include <stdio.h>
#include <string.h>

#include "render/render.h"

/* Under the stack summary: "  NVLink    GPU0 18/18, GPU1 16/18 links up (NVLink 4, 26.562 GB/s a link)" */
static void nvlink_line(FILE *out, const facts *f, long long ngpu)
{
	bool any = false;
	long long version = 0, speed = 0;
	for (long long i = 0; i < ngpu; i++) {
		long long links = 0;
		if (!facts_int(f, &links, "nvml.gpu.%lld.nvlink.count", i) || links <= 0)
			continue;
		fprintf(out, "%s%lld %lld/%lld", any ? ", GPU" : "  NVLink    GPU", i,
			facts_int_or(f, 0, "nvml.gpu.%lld.nvlink.active_count", i), links);
		any = true;
		for (long long l = 0; l < links && l < 18; l++) {
			const char *st = facts_str(f, "nvml.gpu.%lld.nvlink.%lld.state", i, l);
			if (!st || strcmp(st, "active") != 0)
				continue;
			long long v = facts_int_or(f, 0, "nvml.gpu.%lld.nvlink.%lld.version", i, l);
			long long sp = facts_int_or(f, 0, "nvml.gpu.%lld.nvlink.%lld.speed_mbps", i, l);
			version = v > version ? v : version;
			speed = sp > speed ? sp : speed;
		}
	}
	if (!any)
		return;
	fprintf(out, " links up");
	if (version > 0 && speed > 0)
		fprintf(out, " (NVLink %lld, %.3f GB/s a link)", version, speed / 1000.0);
	else if (version > 0)
		fprintf(out, " (NVLink %lld)", version);
	fputc('\n', out);
}

void render_topology_text(FILE *out, const facts *f, bool color)
{
	long long ngpu = facts_int_or(f, 0, "nvml.device_count");
	long long nnic = facts_int_or(f, 0, "topology.nic.count");
	if (ngpu > 16)
		ngpu = 16;
	if (nnic > 16)
		nnic = 16;
	nvlink_line(out, f, ngpu);
	/* one GPU and no NIC has no path to show */
	if (ngpu < 1 || (ngpu < 2 && nnic < 1))
		return;
	bool any = false;
	for (long long i = 0; i < ngpu && !any; i++)
		any = facts_str(f, "topology.gpu.%lld.gpu.%lld", i, (i + 1) % ngpu) ||
		      (nnic > 0 && facts_str(f, "topology.gpu.%lld.nic.0", i));
	if (!any)
		return;
	fprintf(out, "\n%sTopology%s (as nvidia-smi topo -m)\n        ", col_bold(color), col_reset(color));
	for (long long j = 0; j < ngpu; j++) {
		char h[16];
		snprintf(h, sizeof(h), "GPU%lld", j);
		fprintf(out, " %-5s", h);
	}
	for (long long k = 0; k < nnic; k++) {
		char h[16];
		snprintf(h, sizeof(h), "NIC%lld", k);
		fprintf(out, " %-5s", h);
	}
	fprintf(out, " NUMA\n");
	for (long long i = 0; i < ngpu; i++) {
		fprintf(out, "  GPU%-3lld", i);
		for (long long j = 0; j < ngpu; j++) {
			const char *p = i == j ? "X" : facts_str(f, "topology.gpu.%lld.gpu.%lld", i, j);
			fprintf(out, " %-5s", p ? p : "?");
		}
		for (long long k = 0; k < nnic; k++) {
			const char *p = facts_str(f, "topology.gpu.%lld.nic.%lld", i, k);
			fprintf(out, " %-5s", p ? p : "?");
		}
		long long numa = 0;
		if (facts_int(f, &numa, "topology.gpu.%lld.numa_node", i) && numa >= 0)
			fprintf(out, " %lld\n", numa);
		else
			fprintf(out, " N/A\n");
	}
	for (long long k = 0; k < nnic; k++) {
		const char *name = facts_str(f, "topology.nic.%lld.name", k);
		const char *bus = facts_str(f, "topology.nic.%lld.bus_id", k);
		fprintf(out, "  NIC%lld: %s%s%s%s\n", k, name ? name : "", name ? " (" : "", bus ? bus : "?", name ? ")" : "");
	}
}
