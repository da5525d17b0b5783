/* The knowledge base as --kb DIR reads it: one table (the first byte picks which) replaced by the
 * input, then everything that interprets the tables runs over it: the rules on a few machines,
 * the fix plan (PyTorch build choice, pip and conda lines, the Dockerfile). fuzz_csv covers the
 * CSV syntax; this covers what the cells mean (versions, ranges, arch lists, patterns). */
#include <cjson/cJSON.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/facts.h"
#include "core/findings.h"
#include "kb/kb.h"
#include "python/fixplan.h"
#include "diagnose/diagnose.h"

static const char *const tables[] = {"arch_rates", "cuda_arch",	  "cuda_driver", "cudnn_cuda", "gpu_cc",
				     "gpu_peaks",  "torch_cuda",  "torch_cudnn", "torch_vision", "tune_expect",
				     "xid"};

/* Machines the rules and the fix plan judge: an H200 on 580, a V100 on 470, a GeForce on 550. */
static const char *const machines[] = {
	"{\"hardware\":{\"pci.count\":1},\"nvml\":{\"device_count\":1,\"driver_version\":\"580.159.04\","
	"\"gpu.0.cc\":\"9.0\",\"gpu.0.name\":\"NVIDIA H200\"},\"python\":{\"exists\":true,\"selected\":"
	"\"/usr/bin/python3\",\"torch.installed\":true,\"torch.version\":\"2.5.1+cpu\",\"torch.variant\":\"cpu\"}}",
	"{\"hardware\":{\"pci.count\":2},\"nvml\":{\"device_count\":2,\"driver_version\":\"470.256.02\","
	"\"gpu.0.cc\":\"7.0\",\"gpu.0.name\":\"Tesla V100-SXM2-32GB\",\"gpu.1.cc\":\"7.0\",\"gpu.1.name\":"
	"\"Tesla V100-SXM2-32GB\"},\"toolkit\":{\"count\":1,\"0.root\":\"/usr/local/cuda-12.4\",\"0.version\":"
	"\"12.4.1\"},\"kmsg\":{\"xid.count\":1,\"xid.0.code\":79,\"xid.0.count\":3}}",
	"{\"nvml\":{\"device_count\":1,\"driver_version\":\"550.54\",\"gpu.0.name\":\"NVIDIA GeForce RTX 5090\"},"
	"\"python\":{\"exists\":true,\"selected\":\"/opt/venv/bin/python\",\"torch.installed\":true,"
	"\"torch.version\":\"2.7.0+cu128\",\"torch.cuda\":\"12.8\",\"torch.arch\":\"sm_80 sm_90 sm_120\"}}",
};

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	char dir[PATH_MAX];
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/gpuvet-fuzz-kb-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		abort();
	char *path = xasprintf("%s/%s.csv", dir, tables[data[0] % GV_ARRAY_LEN(tables)]);
	FILE *fp = fopen(path, "wb");
	fwrite(data + 1, 1, size - 1, fp);
	fclose(fp);
	char *err = NULL;
	kb *k = kb_load(dir, &err);
	free(err);
	nftw(dir, rm_one, 4, FTW_DEPTH | FTW_PHYS);
	free(path);
	if (!k)
		return 0;
	for (size_t i = 0; i < GV_ARRAY_LEN(machines); i++) {
		cJSON *doc = cJSON_Parse(machines[i]);
		char *e2 = NULL;
		facts *f = facts_from_json(doc, &e2);
		cJSON_Delete(doc);
		free(e2);
		if (!f)
			abort();
		findings fs;
		findings_init(&fs);
		diagnose_opts o = {.kb = k};
		diagnose(f, &o, &fs);
		findings_free(&fs);
		fix_machine m;
		fix_machine_read(f, k, &m);
		fix_choice c;
		fix_choose(k, &m, &c);
		char line[1024];
		fix_pip_line(&c, "python3", line, sizeof(line));
		fix_conda_line(&c, line, sizeof(line));
		free(fix_dockerfile(k, &m, &c));
		facts_free(f);
	}
	kb_free(k);
	return 0;
}
