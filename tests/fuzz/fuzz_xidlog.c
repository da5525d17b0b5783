/* The kernel log's Xid lines and out-of-memory kills (read from /var/log and /dev/kmsg: any bytes). */
#include <stdint.h>
#include <string.h>

#include "nvidia/xidlog.h"
#include "parse/klog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* line by line, as the probe does, and the whole input as one line */
	const char *p = (const char *)data, *end = p + size;
	bool pending = false;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		xid_line x;
		if (xid_parse_line(p, n, 2026, &x)) {
			/* the strings must be terminated within their buffers */
			if (strlen(x.pci) >= sizeof(x.pci) || strlen(x.message) >= sizeof(x.message))
				__builtin_trap();
		}
		oom_kill k;
		if (oom_parse_line(p, n, 2026, &pending, &k) && strlen(k.comm) >= sizeof(k.comm))
			__builtin_trap();
		p += n + 1;
	}
	xid_line x;
	xid_parse_line((const char *)data, size, 0, &x);
	return 0;
}
