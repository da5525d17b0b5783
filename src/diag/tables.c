/* diag's tables as data: the tests, the run levels and the findings (diag.h declares them). */
#include <string.h>

#include "diag/diag.h"

#define DIAG_TT_(ID, name, level, scope, dcgm, what) {name, level, scope, dcgm, what},
const diag_test_info diag_tests[DIAG_NTESTS] = {DIAG_TESTS(DIAG_TT_)};
#undef DIAG_TT_

#define DIAG_FT_(ID, id, test, sev, title, action) {id, test, sev, title, action},
const diag_finding_info diag_findings[DIAG_NFINDINGS] = {DIAG_FINDINGS(DIAG_FT_)};
#undef DIAG_FT_

/*
 * The run levels. Level 1 is for a Slurm prolog or a Kubernetes init container (at most 10 s a
 * node on an H200); 2 the acceptance run (about 2 minutes); 3 the burn-in (about 15); 4 for
 * post-mortems. The memory slice of levels 1 and 2 is 5% of the free memory, at most 8 GiB: a
 * pass over it takes milliseconds at HBM speed, so the level's time goes to the GEMMs.
 */
const diag_level diag_levels[4] = {
	{1, "quick", "10 s", 2, false, 0.05, 8ll << 30, false, 1, false, 256ll << 20, 0},
	{2, "medium", "2 min", 60, true, 0.05, 8ll << 30, false, 1, false, 1ll << 30, 0},
	{3, "long", "15 min", 60, true, 0.95, 0, true, 1, false, 1ll << 30, 180},
	{4, "xlong", "1 h", 300, true, 0.95, 0, true, 4, true, 1ll << 30, 900},
};

const diag_level *diag_level_parse(const char *s)
{
	if (!s)
		return NULL;
	for (size_t i = 0; i < GV_ARRAY_LEN(diag_levels); i++) {
		char num[4] = {(char)('0' + diag_levels[i].level), 0};
		if (strcmp(s, num) == 0 || strcmp(s, diag_levels[i].name) == 0)
			return &diag_levels[i];
	}
	return NULL;
}

int diag_test_find(const char *name)
{
	for (int i = 0; name && i < DIAG_NTESTS; i++)
		if (strcmp(name, diag_tests[i].name) == 0)
			return i;
	return -1;
}

const char *diag_status_name(diag_status s)
{
	static const char *const names[] = {"pass", "skip", "warn", "fail"};
	return (unsigned)s < GV_ARRAY_LEN(names) ? names[s] : "fail";
}
