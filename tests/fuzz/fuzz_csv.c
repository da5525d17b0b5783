/* The knowledge-base CSV reader (--kb DIR reads user files). */
#include <stdint.h>
#include <stdlib.h>

#include "kb/csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *err = NULL;
	csv_table *t = csv_parse("fuzz", (const char *)data, size, &err);
	if (t)
		for (size_t r = 0; r < t->nrows; r++)
			(void)csv_cell(t, r, "a");
	csv_free(t);
	free(err);
	return 0;
}
