#include "kb/kb_xid.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The first of the candidate columns that the table has. The catalogue's column names are
 * looked up by meaning, so a renamed column degrades to "unknown", never to a crash. */
static const char *cell_any(const csv_table *t, size_t row, const char *const *cols)
{
	for (; *cols; cols++)
		if (csv_col(t, *cols) >= 0)
			return csv_cell(t, row, *cols);
	return "";
}

static bool word_in(const char *s, const char *const *words)
{
	for (; *words; words++)
		if (strcasestr(s, *words))
			return true;
	return false;
}

bool kb_xid_lookup(const kb *k, unsigned code, xid_info *out)
{
	static const char *const code_cols[] = {"xid", "code", "id", NULL};
	static const char *const meaning_cols[] = {"meaning", "description", "title", "name", "summary", NULL};
	static const char *const action_cols[] = {"action", "fix", "user_action", "recommended_action", NULL};
	static const char *const sev_cols[] = {"severity", "sev", "impact", "class", NULL};
	static const char *const severe_words[] = {"fail", "severe", "critical", "fatal", "unhealthy", "hardware", "reset", "rma", NULL};

	out->meaning = "";
	out->action = "look the code up in NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors) and the kernel log";
	out->severe = false;
	const csv_table *t = k ? kb_table(k, "xid") : NULL;
	if (!t)
		return false;
	for (size_t r = 0; r < t->nrows; r++) {
		const char *c = cell_any(t, r, code_cols);
		char *end;
		unsigned long v = strtoul(c, &end, 10);
		if (end == c || v != code)
			continue;
		out->meaning = cell_any(t, r, meaning_cols);
		const char *a = cell_any(t, r, action_cols);
		if (*a)
			out->action = a;
		out->severe = word_in(cell_any(t, r, sev_cols), severe_words);
		return true;
	}
	return false;
}
