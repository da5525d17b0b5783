/* --require expressions (rules/policy.c) over arbitrary bytes: the parser, the evaluation against
 * facts of every type and state, and the JUnit report that carries the expression and its
 * evidence (written to a memory stream). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/render.h"
#include "rules/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *expr = malloc(size + 1);
	memcpy(expr, data, size);
	expr[size] = '\0';
	char *err = NULL;
	bool ok = policy_check_syntax(expr, &err);
	free(err);
	facts *f = facts_new();
	facts_put_int(f, NULL, 2, "nvml.device_count");
	facts_put_str(f, NULL, "550.54.15", "nvml.driver_version");
	facts_put_real(f, NULL, 0.5, "meta.probe_seconds.nvml");
	facts_put_bool(f, NULL, true, "hardware.secure_boot");
	facts_put_str(f, NULL, "12.10", "toolkit.0.version");
	facts_put_state(f, FACT_ERROR, "nvmlInit", "code 999", "nvml.init");
	findings fs;
	findings_init(&fs);
	findings_add(&fs, "gpu.hot", "gpu", SEV_WARN, "hot");
	if (ok)
		policy_apply(expr, f, &fs);
	strlist reqs = {0};
	sl_push(&reqs, expr);
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	if (out) {
		render_opts ro = {.strict = false, .seconds = 0.0};
		render_check_junit(out, &fs, &reqs, &ro);
		fclose(out);
	}
	free(buf);
	sl_free(&reqs);
	findings_free(&fs);
	facts_free(f);
	free(expr);
	return 0;
}
