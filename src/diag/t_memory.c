/*
 * diag's memory test: memtest86's patterns (bench/memtest.h) written and read back over a slice
 * of the free memory (levels 1 and 2: 5%, at most 8 GiB) or at least 95% of it (levels 3 and 4,
 * every pattern; level 4 several passes, walking ones over all 64 bits). An error names the
 * pattern and pass, the device address, what was read and expected, and which bits differ.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/gpu.h"
#include "bench/memtest.h"
#include "diag/diag_internal.h"

void diag_t_memory(diag_ctx *c, diag_gpu *g)
{
	diag_result *x = diag_result_add(c->r, DIAG_T_MEMORY, g->ordinal);
	str_copy(x->metric, sizeof(x->metric), "memory.errors");
	gpu_session *s = c->bc.gpu;
	char why[512];
	if (!gpu_use(s, g->ordinal, why, sizeof(why))) {
		diag_result_set(x, DIAG_SKIP, "GPU %d cannot be used: %s", g->ordinal, why);
		return;
	}
	gpu_dev *d = &s->dev[g->ordinal];
	memtest_mem m;
	memset(&m, 0, sizeof(m));
	if (!memtest_alloc(s, c->lv->memory_fraction, (uint64_t)c->lv->memory_max_bytes, 0, &m, why, sizeof(why))) {
		if (gpu_broken(s)) {
			diag_result_set(x, DIAG_FAIL, "the memory could not be allocated: %s", why);
			diag_result_finding(x, DIAG_F_ERROR, -1);
		} else {
			diag_result_set(x, DIAG_SKIP, "no memory could be allocated: %s", why);
		}
		return;
	}
	double gib = (double)m.bytes / (double)(1ull << 30);
	sl_pushf(&x->evidence, "tested %.1f GiB in %zu allocations: %.0f%% of the %.1f GiB free (%.1f GiB total)", gib, m.nchunks,
		 m.free_before ? (double)m.bytes / (double)m.free_before * 100 : 0, (double)m.free_before / (double)(1ull << 30),
		 (double)m.total / (double)(1ull << 30));
	memtest_pattern pats[MEMTEST_N_PATTERNS];
	int np = 0;
	if (c->lv->memory_all_patterns) {
		for (int p = 0; p < MEMTEST_N_PATTERNS; p++)
			pats[np++] = (memtest_pattern)p;
	} else {
		pats[np++] = MEMTEST_OWN_ADDRESS;
		pats[np++] = MEMTEST_MOVING_INV_RANDOM;
	}
	uint64_t errors = 0, bytes = 0;
	double gpu_s = 0, t0 = now_seconds();
	bool first_error = true, cuda_error = false;
	char text[512];
	for (int pass = 0; pass < c->lv->memory_passes && !diag_stopping(c); pass++) {
		for (int i = 0; i < np && !diag_stopping(c); i++) {
			memtest_opts mo;
			memset(&mo, 0, sizeof(mo));
			mo.long_run = c->lv->memory_all_bits;
			mo.seed = 0x6d656d74ull + (uint64_t)pass * 7919u + (uint64_t)i;
			mo.stop = c->stop;
			/* generous: the slowest GPU in service moves 100 GB/s, and every pattern moves its
			 * memory a few times */
			mo.deadline_s = 30 + (double)m.bytes * 12 / 100e9;
			mo.inject = c->o->inject == DIAG_INJECT_MEMORY && !c->injected;
			mo.inject_offset = MEMTEST_DERIVE;
			mo.inject_bit = -1;
			diag_progress(c, "GPU %d: memory %s, pass %d of %d, %.1f GiB", g->ordinal, memtest_pattern_get(pats[i])->name,
				      pass + 1, c->lv->memory_passes, gib);
			diag_arm(c, DIAG_T_MEMORY, g->ordinal, "the memory test's kernels", mo.deadline_s + 10);
			memtest_result r;
			bool ok = memtest_run(s, d, &m, pats[i], &mo, &r);
			diag_disarm();
			c->injected |= r.injected;
			bytes += r.bytes;
			gpu_s += r.gpu_seconds;
			if (!ok) {
				sl_pushf(&x->evidence, "%s: %s", memtest_pattern_get(pats[i])->name, r.error);
				cuda_error = true;
				break;
			}
			if (r.gpu_seconds > 0) {
				char metric[48];
				snprintf(metric, sizeof(metric), "memory.%s", memtest_pattern_get(pats[i])->name);
				diag_result_figure(x, metric, (double)r.bytes / r.gpu_seconds / 1e9, "GB/s", 1);
			}
			if (r.injected)
				sl_pushf(&x->evidence, "--inject memory: bit %d of the word at 0x%llx flipped before check %d of %s: %s",
					 r.inject_bit, (unsigned long long)r.inject_addr, r.inject_step, memtest_pattern_get(pats[i])->name,
					 r.errors ? "found" : "NOT found");
			if (r.errors) {
				errors += r.errors;
				memtest_describe(&r, text, sizeof(text));
				if (first_error || x->evidence.n < 12)
					sl_pushf(&x->evidence, "pass %d: %s", pass + 1, text);
				first_error = false;
			}
		}
		if (cuda_error)
			break;
	}
	double pct = m.free_before ? (double)m.bytes / (double)m.free_before * 100 : 0;
	memtest_free(s, &m);
	x->value = (double)errors;
	x->expected = 0;
	x->seconds = now_seconds() - t0;
	double gbps = gpu_s > 0 ? (double)bytes / gpu_s / 1e9 : NAN;
	diag_result_figure(x, "memory.test_gbps", gbps, "GB/s", 1);
	if (cuda_error) {
		diag_result_set(x, DIAG_FAIL, "the memory test failed with a CUDA error over %.1f GiB", gib);
		diag_result_finding(x, DIAG_F_ERROR, -1);
	} else if (errors) {
		diag_result_set(x, DIAG_FAIL, "%llu error%s over %.1f GiB: %s", (unsigned long long)errors, errors == 1 ? "" : "s", gib,
				text);
		diag_result_finding(x, DIAG_F_MEMORY_ERRORS, -1);
	} else {
		diag_result_set(x, DIAG_PASS, "%d pattern%s%s over %.1f GiB (%.0f%% of the free memory): no error, %.0f GB/s written and read",
				np, np == 1 ? "" : "s", c->lv->memory_passes > 1 ? ", every pass," : "", gib, pct, gbps);
	}
}
