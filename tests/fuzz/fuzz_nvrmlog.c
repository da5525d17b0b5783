/* The driver's refusal messages (nvidia/nvrmlog.h) over arbitrary bytes: every line of the input
 * fed in order, as the kernel log probe does. */
#include <stdint.h>
#include <string.h>

#include "nvidia/nvrmlog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	nvrm_scan s;
	memset(&s, 0, sizeof(s));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		nvrm_refusal r;
		if (nvrm_scan_line(&s, p, n, &r) && (!r.driver[0] || strlen(r.driver) >= sizeof(r.driver)))
			__builtin_trap(); /* a refusal always names its driver */
		p += n + 1;
	}
	return 0;
}
