/* check's text: the topology matrix, as `nvidia-smi topo -m` prints it (facts topology.*). */
#include <stdio.h>
#include <string.h>

#include "render/render.h"
#include "core/factkeys.h"

/* Under the stack summary: "  NVLink    GPU0 18/18, GPU1 16/18 links up (NVLink 4, 26.562 GB/s a link)" */
static void nvlink_line(FILE *out, const facts *f, long long ngpu)
{
	bool any = false;
	long long version = 0, speed = 0;
	for (long long i = 0; i < ngpu; i++) {
		long long links = 0;
		if (!facts_int(f, &links, FK_NVML_GPU_NVLINK_COUNT(lld), i) || links <= 0)
			continue;
		fprintf(out, "%s%lld %lld/%lld", any ? ", GPU" : "  NVLink    GPU", i,
			facts_int_or(f, 0, FK_NVML_GPU_NVLINK_ACTIVE_COUNT(lld), i), links);
		any = true;
		for (long long l = 0; l < links && l < 18; l++) {
			const char *st = facts_str(f, FK_NVML_GPU_NVLINK_STATE(lld, lld), i, l);
			if (!st || strcmp(st, "active") != 0)
				continue;
			long long v = facts_int_or(f, 0, FK_NVML_GPU_NVLINK_VERSION(lld, lld), i, l);
			long long sp = facts_int_or(f, 0, FK_NVML_GPU_NVLINK_SPEED_MBPS(lld, lld), i, l);
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
	long long ngpu = facts_int_or(f, 0, FK_NVML_DEVICE_COUNT);
	long long nnic = facts_int_or(f, 0, FK_TOPOLOGY_NIC_COUNT);
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
		any = facts_str(f, FK_TOPOLOGY_GPU_GPU(lld, lld), i, (i + 1) % ngpu) ||
		      (nnic > 0 && facts_str(f, FK_TOPOLOGY_GPU_NIC(lld, d), i, 0));
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
			const char *p = i == j ? "X" : facts_str(f, FK_TOPOLOGY_GPU_GPU(lld, lld), i, j);
			fprintf(out, " %-5s", p ? p : "?");
		}
		for (long long k = 0; k < nnic; k++) {
			const char *p = facts_str(f, FK_TOPOLOGY_GPU_NIC(lld, lld), i, k);
			fprintf(out, " %-5s", p ? p : "?");
		}
		long long numa = 0;
		if (facts_int(f, &numa, FK_TOPOLOGY_GPU_NUMA_NODE(lld), i) && numa >= 0)
			fprintf(out, " %lld\n", numa);
		else
			fprintf(out, " N/A\n");
	}
	for (long long k = 0; k < nnic; k++) {
		const char *name = facts_str(f, FK_TOPOLOGY_NIC_NAME(lld), k);
		const char *bus = facts_str(f, FK_TOPOLOGY_NIC_BUS_ID(lld), k);
		fprintf(out, "  NIC%lld: %s%s%s%s\n", k, name ? name : "", name ? " (" : "", bus ? bus : "?", name ? ")" : "");
	}
}
