#include "kb/kb_tune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/util.h"

/* An empty cell matches anything; a number cell must equal n. */
static bool int_cell_matches(const char *cell, int n)
{
	if (!cell || !*cell)
		return true;
	char *end;
	long v = strtol(cell, &end, 10);
	return *end == '\0' && v == n;
}

/* GPU names: case-insensitive, and some drivers leave out the "NVIDIA " prefix. */
static bool gpu_matches(const char *cell, const char *gpu)
{
	if (strcasecmp(cell, gpu) == 0)
		return true;
	if (strncasecmp(cell, "NVIDIA ", 7) == 0 && strcasecmp(cell + 7, gpu) == 0)
		return true;
	return false;
}

bool kb_tune_expect(const kb *k, const tune_expect_key *key, double *value, double *tolerance, const char **source)
{
	const csv_table *t = k ? kb_table(k, "tune_expect") : NULL;
	if (!t || !key->gpu || !key->model || !key->setting || !key->metric)
		return false;
	for (size_t r = 0; r < t->nrows; r++) {
		const char *impl = csv_cell(t, r, "impl");
		if (!gpu_matches(csv_cell(t, r, "gpu"), key->gpu) || strcmp(csv_cell(t, r, "model"), key->model) != 0 ||
		    strcmp(csv_cell(t, r, "setting"), key->setting) != 0 ||
		    strcmp(csv_cell(t, r, "metric"), key->metric) != 0)
			continue;
		if (*impl && (!key->impl || strcmp(impl, key->impl) != 0))
			continue;
		if (!*csv_cell(t, r, "batch") || !int_cell_matches(csv_cell(t, r, "batch"), key->batch))
			continue;
		if (!int_cell_matches(csv_cell(t, r, "image_size"), key->image_size) ||
		    !int_cell_matches(csv_cell(t, r, "seq_len"), key->seq_len))
			continue;
		char *end;
		double v = strtod(csv_cell(t, r, "value"), &end);
		if (*end || !isfinite(v) || v <= 0)
			continue;
		*value = v;
		if (tolerance) {
			const char *tc = csv_cell(t, r, "tolerance");
			double tol = tc && *tc ? strtod(tc, &end) : NAN;
			*tolerance = tc && *tc && !*end && isfinite(tol) && tol > 0 && tol < 1 ? tol : NAN;
		}
		if (source)
			*source = csv_cell(t, r, "source");
		return true;
	}
	return false;
}
