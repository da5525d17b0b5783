/* /etc/ld.so.cache (a binary file of the examined machine). */
#include <stdint.h>
#include <stdlib.h>

#include "python/ldsim.h"

static void on_entry(const char *so, const char *path, void *ctx)
{
	(void)so;
	(void)path;
	(*(int *)ctx)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int n = 0;
	ldcache_parse(data, size, on_entry, &n);
	return 0;
}
