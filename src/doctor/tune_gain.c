/*
 * The gain `gpuvet tune` measured for AMP or TF32 over fp32 on a GPU class, from the history
 * database: the job doctor's fp32-math fix quotes it (doctor.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "doctor/doctor.h"
#include "store/history.h"

/* "tune.resnet50.bs64.img224.gpu.fp32.ms" -> prefix "tune.resnet50.bs64.img224.gpu." and setting "fp32" */
static bool split_tune_name(const char *name, char *prefix, size_t psize, char *setting, size_t ssize)
{
	size_t n = strlen(name);
	if (!str_starts(name, "tune.") || n < 4 || strcmp(name + n - 3, ".ms") != 0)
		return false;
	const char *gpu = strstr(name, ".gpu.");
	if (!gpu)
		return false;
	size_t plen = (size_t)(gpu - name) + 5;
	size_t slen = n - 3 - plen;
	if (plen >= psize || slen == 0 || slen >= ssize)
		return false;
	memcpy(prefix, name, plen);
	prefix[plen] = '\0';
	memcpy(setting, name + plen, slen);
	setting[slen] = '\0';
	return true;
}

static const char *setting_words(const char *s)
{
	return strcmp(s, "amp_bf16") == 0 ? "AMP bf16" : strcmp(s, "amp_fp16") == 0 ? "AMP fp16" : "TF32";
}

bool doctor_tune_gain(const char *db, const char *gpu_name, double *gain, char *source, size_t ssize)
{
	*gain = NAN;
	if (source && ssize)
		source[0] = '\0';
	if (!gpu_name || !*gpu_name)
		return false;
	char *err = NULL;
	history *h = history_open(db, HISTORY_READ, &err);
	free(err);
	if (!h)
		return false;
	hist_query q = {.any_kind = false, .kind = HIST_TUNE, .limit = 50};
	hist_run_row *runs = NULL;
	size_t nruns = 0;
	err = NULL;
	bool found = false;
	if (history_list(h, &q, &runs, &nruns, &err)) {
		for (size_t i = 0; i < nruns && !found; i++) {
			const hist_run_row *r = &runs[i];
			bool same = false;
			for (size_t g = 0; g < r->ngpus && !same; g++)
				same = r->gpus[g].name && strcmp(r->gpus[g].name, gpu_name) == 0;
			if (!same)
				continue;
			/* each model's fp32 baseline against its fastest precision setting */
			for (size_t a = 0; a < r->nresults && !found; a++) {
				char prefix[200], setting[64];
				if (!split_tune_name(r->results[a].name, prefix, sizeof(prefix), setting, sizeof(setting)) ||
				    strcmp(setting, "fp32") != 0 || !(r->results[a].value > 0))
					continue;
				double best = INFINITY;
				const char *best_setting = NULL;
				for (size_t b = 0; b < r->nresults; b++) {
					char p2[200], s2[64];
					if (!split_tune_name(r->results[b].name, p2, sizeof(p2), s2, sizeof(s2)) ||
					    strcmp(p2, prefix) != 0 || !(r->results[b].value > 0))
						continue;
					if ((strcmp(s2, "tf32") == 0 || strcmp(s2, "amp_bf16") == 0 || strcmp(s2, "amp_fp16") == 0) &&
					    r->results[b].value < best) {
						best = r->results[b].value;
						best_setting = r->results[b].name + strlen(prefix);
					}
				}
				if (!best_setting || !isfinite(best))
					continue;
				char bs[64];
				snprintf(bs, sizeof(bs), "%.*s", (int)(strlen(best_setting) - 3), best_setting);
				*gain = r->results[a].value / best;
				char model[96];
				const char *m = prefix + 5, *dot = strchr(m, '.');
				snprintf(model, sizeof(model), "%.*s", dot ? (int)(dot - m) : (int)strlen(m), m);
				if (source && ssize)
					snprintf(source, ssize, "gpuvet tune run %lld on %s: %s %s against fp32", r->id, gpu_name,
						 model, setting_words(bs));
				found = true;
			}
		}
		hist_runs_free(runs, nruns);
	}
	free(err);
	history_close(h);
	return found;
}
