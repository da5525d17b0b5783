/* The /etc/ld.so.cache parser over arbitrary bytes (a truncated or hostile cache). */
#include <stdint.h>
#include <stdlib.h>

#include "loader/loader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ldcache c;
	const char *err = NULL;
	if (ldcache_parse(data, size, &c, &err) == 0) {
		(void)ldcache_lookup(&c, "libcudart.so.13");
		if (c.n)
			(void)ldcache_lookup(&c, c.v[0].soname);
	}
	ldcache_free(&c);
	return 0;
}
