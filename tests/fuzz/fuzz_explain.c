/* The error-signature matcher of gpuvet explain/run: any bytes, fed in two pieces split where the
 * first byte says, against the built-in catalogue. The regular expressions must run over a bounded
 * multiple of the input (the matcher is linear): more is a finding, like a crash. */
#include <stdint.h>
#include <stdlib.h>

#include "explain/match.h"
#include "kb/kb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static kb *k;
	static sig_catalogue *c;
	if (!c) {
		char *err = NULL;
		k = kb_load(NULL, &err);
		c = k ? sig_catalogue_new(k, &err) : NULL;
		if (!c)
			abort();
	}
	size_t cut = size ? (size_t)data[0] * size / 256 : 0;
	sig_scan *s = sig_scan_new(c);
	sig_scan_feed(s, (const char *)data, cut);
	sig_scan_feed(s, (const char *)data + cut, size - cut);
	size_t n;
	const sig_hit *h = sig_scan_finish(s, &n);
	for (size_t i = 0; i < n; i++)
		if (h[i].count == 0 || h[i].sig >= sig_count(c) || h[i].nranks > h[i].count)
			abort();
	if (sig_scan_work(s) > 32 * (unsigned long long)size + 65536)
		abort();
	sig_scan_free(s);
	return 0;
}
