/* gpuvet report's inputs: any document given with --json, then the whole page drawn from it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "report/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	report_data *d = report_data_new();
	char *err = NULL;
	/* twice: a second document of the same kind makes trends and regressions */
	for (int i = 0; i < 2; i++) {
		if (!report_add_document(d, "fuzz.json", (const char *)data, size, &err)) {
			free(err);
			err = NULL;
		}
	}
	FILE *out = fopen("/dev/null", "w");
	if (out) {
		report_write_html(out, d, &(report_opts){.threshold_pct = 5, .generated_utc = "2026-12-01T00:00:00Z"});
		fclose(out);
	}
	report_data_free(d);
	return 0;
}
