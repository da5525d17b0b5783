/* gpuvet report's inputs: any document given with --json (as text, and as a stream), then the whole
 * page drawn from it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "report/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	report_data *d = report_data_new();
	char *err = NULL;
	/* twice: a second document of the same kind makes trends and regressions; the second time
	 * read from a stream as --json FILE reads it (a history export run by run: report/runstream.h) */
	if (!report_add_document(d, "fuzz.json", (const char *)data, size, &err)) {
		free(err);
		err = NULL;
	}
	FILE *in = size ? fmemopen((void *)data, size, "r") : NULL;
	if (in) {
		if (!report_add_file(d, "fuzz.json", in, 1 << 20, &err)) {
			free(err);
			err = NULL;
		}
		fclose(in);
	}
	FILE *out = fopen("/dev/null", "w");
	if (out) {
		report_write_html(out, d, &(report_opts){.threshold_pct = 5, .generated_utc = "2026-12-01T00:00:00Z"});
		fclose(out);
	}
	report_data_free(d);
	return 0;
}
