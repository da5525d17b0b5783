/* The Accept header of a scrape (untrusted: anyone who reaches the port sends it). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "expo/expo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1); /* an exact copy, so ASan sees a read past the end */
	memcpy(s, data, size);
	s[size] = '\0';
	expo_format f = expo_negotiate(s);
	if (f != EXPO_TEXT && f != EXPO_OPENMETRICS)
		abort();
	free(s);
	return 0;
}
