/* The Python frames of a process's main thread, from py-spy (sampler/pystack.h). */
#include "sampler/pystack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/proc.h"
#include "core/sysroot.h"
#include "core/text.h"
#include "core/util.h"

bool pystack_parse(const char *text, pystack *out)
{
	out->n = 0;
	/* "Thread 0x7F.. (idle): "MainThread"" then frames indented by 4 ("    read (tarfile.py:123)"),
	 * their --locals indented further */
	const char *best = NULL;
	for (const char *p = text; p && *p;) {
		if (strncmp(p, "Thread ", 7) == 0) {
			const char *nl = strchr(p, '\n');
			size_t len = nl ? (size_t)(nl - p) : strlen(p);
			bool main = memmem(p, len, "\"MainThread\"", 12) != NULL;
			if (!best || main)
				best = p;
			if (main)
				break;
		}
		const char *nl = strchr(p, '\n');
		p = nl ? nl + 1 : NULL;
	}
	if (!best)
		return false;
	const char *p = strchr(best, '\n');
	while (p && *++p && out->n < PYSTACK_MAX_FRAMES) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		if (len < 5 || strncmp(p, "    ", 4) != 0)
			break; /* the next thread, or the end */
		if (p[4] != ' ') {
			char raw[160];
			snprintf(raw, sizeof(raw), "%.*s", (int)(len - 4), p + 4);
			/* frames name the user's files and functions: no control characters reach a terminal */
			text_safe(out->frames[out->n], sizeof(out->frames[out->n]), raw);
			out->n++;
		}
		p = nl;
	}
	return out->n > 0;
}

/* The py-spy on PATH, malloc'd; NULL when none. */
static char *find_pyspy(void)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		return NULL;
	strlist dirs = {0};
	sl_split(&dirs, path, ":", false);
	char *found = NULL;
	for (size_t i = 0; i < dirs.n && !found; i++) {
		char *cand = xasprintf("%s/py-spy", dirs.v[i]);
		if (access(cand, X_OK) == 0)
			found = cand;
		else
			free(cand);
	}
	sl_free(&dirs);
	return found;
}

bool pystack_dump(unsigned pid, int timeout_ms, pystack *out)
{
	memset(out, 0, sizeof(*out));
	if (sysroot_active()) {
		snprintf(out->why, sizeof(out->why), "not with --root: the process is not this machine's");
		return false;
	}
	char *tool = find_pyspy();
	if (!tool) {
		out->no_tool = true;
		snprintf(out->why, sizeof(out->why), "py-spy is not on PATH");
		return false;
	}
	char pidtxt[16];
	snprintf(pidtxt, sizeof(pidtxt), "%u", pid);
	char *argv[] = {tool, "dump", "--nonblocking", "--pid", pidtxt, NULL};
	proc_result r;
	proc_run(argv, NULL, NULL, timeout_ms, 1 << 20, &r);
	bool ok = !r.spawn_failed && !r.timed_out && r.status == 0 && pystack_parse(r.out, out);
	if (!ok) {
		char first[160] = "";
		const char *e = r.err && *r.err ? r.err : r.out;
		if (e) {
			const char *nl = strchr(e, '\n');
			char raw[160];
			snprintf(raw, sizeof(raw), "%.*s", nl ? (int)(nl - e) : (int)strlen(e), e);
			text_safe(first, sizeof(first), raw);
		}
		if (r.timed_out)
			snprintf(out->why, sizeof(out->why), "py-spy did not answer within %d s", timeout_ms / 1000);
		else if (r.spawn_failed)
			snprintf(out->why, sizeof(out->why), "py-spy could not be started");
		else
			snprintf(out->why, sizeof(out->why), "py-spy: %s", first[0] ? first : "no Python frames");
	}
	proc_result_free(&r);
	free(tool);
	return ok;
}
