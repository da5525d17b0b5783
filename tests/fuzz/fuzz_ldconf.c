/* The ld.so.conf line parser, and the search-path helpers, over arbitrary text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loader/loader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	strlist dirs = {0}, includes = {0};
	ldconf_parse_text((const char *)data, size, &dirs, &includes);
	sl_free(&dirs);
	sl_free(&includes);
	/* the same bytes as an LD_LIBRARY_PATH / RUNPATH value */
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	strlist entries = {0};
	loader_split_path(s, &entries);
	for (size_t i = 0; i < entries.n; i++)
		free(loader_expand(entries.v[i], "/opt/o", NULL));
	sl_free(&entries);
	free(s);
	return 0;
}
