/* A library child's facts as they cross its report pipe (core/facts_wire.h): whatever bytes come,
 * the parent takes a whole buffer or nothing, and what it took packs again into bytes it takes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/facts.h"
#include "core/facts_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	facts *f = facts_new();
	if (facts_wire_unpack(f, (const char *)data, size)) {
		size_t len;
		char *again = facts_wire_pack(f, &len);
		facts *g = facts_new();
		/* a key given twice keeps its first place: the second pack may be shorter, never unreadable */
		if (!facts_wire_unpack(g, again, len) || facts_count(g) != facts_count(f))
			abort();
		facts_free(g);
		free(again);
	}
	facts_free(f);
	return 0;
}
