/* The Accept and Accept-Encoding headers of a scrape (untrusted: anyone who reaches the port
 * sends them). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "expo/expo.h"
#include "expo/gzip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1); /* an exact copy, so ASan sees a read past the end */
	memcpy(s, data, size);
	s[size] = '\0';
	expo_format f = expo_negotiate(s);
	if (f != EXPO_TEXT && f != EXPO_OPENMETRICS)
		abort();
	volatile bool gz = expo_gzip_accepted(s);
	(void)gz;
	free(s);
	return 0;
}
