/* Tests put their temporary files under $TMPDIR (CTest gives each test its own: the traces
 * fixture in tests/CMakeLists.txt checks that nothing is left there), else /tmp. */
#ifndef GPUVET_TEST_TMP_H
#define GPUVET_TEST_TMP_H
#include <stdio.h>
#include <stdlib.h>

static inline const char *test_tmpdir(void)
{
	const char *t = getenv("TMPDIR");
	return t && t[0] == '/' ? t : "/tmp";
}

/* buf = $TMPDIR/name (name may end in XXXXXX for mkdtemp/mkstemp) */
static inline char *test_tmp_path(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", test_tmpdir(), name);
	return buf;
}
#endif
