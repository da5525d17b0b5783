/* The kernel log Xid line parser: any line, never a read past its end. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/xid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* an exact-size copy, so ASan sees any read past the end */
	char *line = malloc(size ? size : 1);
	if (size)
		memcpy(line, data, size);
	xid_line x;
	if (xid_parse_line(line, size, &x)) {
		if (strlen(x.text) >= sizeof(x.text))
			abort();
		(void)xid_line_matches_bus_id(&x, "00000000:18:00.0");
	}
	free(line);
	return 0;
}
