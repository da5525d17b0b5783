#include "cmd/nvlink_history.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "core/factkeys.h"

#define NVLINK_MAX 18

/* the counters: core/factkeys.h nvlink_counter_keys (their names here, facts now and as put back) */
void nvlink_history_add(hist_run *r, const facts *f)
{
	long long n = facts_int_or(f, 0, FK_NVML_DEVICE_COUNT);
	strbuf marks; /* meta nvlink.links: "GPU:LINKS,..." of the GPUs whose counters were recorded */
	sb_init(&marks);
	for (long long i = 0; i < n && i < 256; i++) {
		long long links = 0;
		if (!facts_int(f, &links, FK_NVML_GPU_NVLINK_COUNT(lld), i) || links <= 0)
			continue;
		bool any = false;
		for (long long l = 0; l < links && l < NVLINK_MAX; l++)
			for (size_t k = 0; k < n_nvlink_counter_keys; k++) {
				long long v = 0;
				if (!facts_nvlink_counter(f, &nvlink_counter_keys[k], false, (int)i, (int)l, &v))
					continue;
				any = true;
				if (v == 0)
					continue; /* a zero is implied by the mark below: 18 links x 4 counters stay small */
				char name[96];
				snprintf(name, sizeof(name), "nvlink.%lld.%s", l, nvlink_counter_keys[k].name);
				history_run_add_result(r, &(hist_result){.name = name, .value = (double)v, .unit = "errors",
									 .better = HIST_LOWER_BETTER, .min = NAN, .max = NAN,
									 .gpu = (int)i});
			}
		if (any)
			sb_addf(&marks, "%s%lld:%lld", marks.len ? "," : "", i, links);
	}
	if (marks.len)
		history_run_set(r, "nvlink.links", marks.buf);
	sb_free(&marks);
}

/* The links recorded for GPU index in a run's nvlink.links meta, or -1. */
static long long marked_links(const hist_run_row *run, int index)
{
	for (size_t m = 0; m < run->nmeta; m++) {
		if (strcmp(run->meta[m].key, "nvlink.links") != 0 || !run->meta[m].value)
			continue;
		const char *p = run->meta[m].value;
		while (*p) {
			char *end;
			long g = strtol(p, &end, 10);
			if (end == p || *end != ':')
				return -1;
			long long links = strtoll(end + 1, &end, 10);
			if (g == index)
				return links;
			if (*end != ',')
				return -1;
			p = end + 1;
		}
	}
	return -1;
}

/* The run is of this machine: the same host and the same --root (or none). */
static bool same_machine(const hist_run_row *run)
{
	char host[256] = "";
	if (gethostname(host, sizeof(host) - 1) != 0)
		host[0] = '\0';
	if (!run->host || strcmp(run->host, host) != 0)
		return false;
	const char *root = NULL;
	for (size_t m = 0; m < run->nmeta; m++)
		if (strcmp(run->meta[m].key, "root") == 0)
			root = run->meta[m].value;
	if (!gopts.root || !root)
		return !gopts.root && !root;
	return strcmp(gopts.root, root) == 0;
}

static void put_run(facts *f, const hist_run_row *run)
{
	const char *src = "history";
	int gpus = 0;
	for (size_t g = 0; g < run->ngpus; g++) {
		const hist_gpu_row *gr = &run->gpus[g];
		long long links = marked_links(run, gr->index);
		if (links <= 0 || !gr->uuid)
			continue; /* no counters were recorded for it */
		int p = gpus++;
		facts_put_str(f, src, gr->uuid, FK_HISTORY_NVLINK_GPU_UUID(d), p);
		for (long long l = 0; l < links && l < NVLINK_MAX; l++)
			for (size_t c = 0; c < n_nvlink_counter_keys; c++) {
				char name[96];
				snprintf(name, sizeof(name), "nvlink.%lld.%s", l, nvlink_counter_keys[c].name);
				double v = 0;
				for (size_t k = 0; k < run->nresults; k++)
					if (run->results[k].gpu == gr->index && strcmp(run->results[k].name, name) == 0)
						v = run->results[k].value;
				facts_put_nvlink_previous(f, src, &nvlink_counter_keys[c], p, (int)l, (long long)v);
			}
	}
	if (!gpus)
		return;
	facts_put_int(f, src, gpus, FK_HISTORY_NVLINK_GPU_COUNT);
	facts_put_int(f, src, run->id, FK_HISTORY_NVLINK_PREVIOUS_RUN);
	facts_put_str(f, src, run->finished_utc ? run->finished_utc : run->started_utc, FK_HISTORY_NVLINK_PREVIOUS_UTC);
}

void nvlink_history_previous(facts *f, const char *db_path)
{
	char *path = history_default_path(db_path);
	struct stat st;
	if (!path || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
		free(path);
		return; /* no history yet: nothing to compare */
	}
	/* opened for writing, as the record at the end will: a corrupt file of ours is moved aside
	 * intact (a reading connection may rewrite its header first), and said so once, here */
	char *err = NULL;
	history *h = history_open(path, HISTORY_WRITE, &err);
	if (h && history_notice(h))
		gv_warning("%s", history_notice(h));
	if (!h) {
		/* a file gpuvet may not write is still read as it is */
		free(err);
		err = NULL;
		h = history_open(path, HISTORY_READ, &err);
	}
	free(path);
	if (!h) {
		free(err);
		return;
	}
	hist_query q = {.any_kind = false, .kind = HIST_CHECK, .limit = 50};
	hist_run_row *runs = NULL;
	size_t n = 0;
	if (history_list(h, &q, &runs, &n, &err)) {
		for (size_t i = 0; i < n; i++)
			if (same_machine(&runs[i])) {
				put_run(f, &runs[i]);
				break;
			}
		hist_runs_free(runs, n);
	}
	free(err);
	history_close(h);
}
