/* Label value escaping of the exposition writer: whatever bytes come in (GPU names, /proc
 * command lines, kernel log text), what goes out must be one well-formed label value that
 * reads back to the input when the input was valid UTF-8. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "expo/expo.h"

/* Reads an escaped value back; returns NULL on a malformed escape. */
static char *unescape(const char *s, size_t len, size_t *outlen)
{
	char *o = xmalloc(len + 1);
	size_t n = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '"' || s[i] == '\n') {
			free(o);
			return NULL;
		}
		if (s[i] != '\\') {
			o[n++] = s[i];
			continue;
		}
		if (++i >= len) {
			free(o);
			return NULL;
		}
		if (s[i] == 'n')
			o[n++] = '\n';
		else if (s[i] == '\\' || s[i] == '"')
			o[n++] = s[i];
		else {
			free(o);
			return NULL;
		}
	}
	*outlen = n;
	return o;
}

/* A strict UTF-8 check written apart from the one under test. */
static int valid_utf8(const unsigned char *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		unsigned c = s[i], need, cp, min;
		if (c == 0)
			return 0;
		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0)
			need = 1, cp = c & 0x1f, min = 0x80;
		else if ((c & 0xf0) == 0xe0)
			need = 2, cp = c & 0x0f, min = 0x800;
		else if ((c & 0xf8) == 0xf0)
			need = 3, cp = c & 0x07, min = 0x10000;
		else
			return 0;
		for (unsigned k = 1; k <= need; k++) {
			if (i + k >= len || (s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += need + 1;
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	strbuf sb;
	sb_init(&sb);
	expo_escape_label(&sb, (const char *)data, size);
	size_t back_len = 0;
	char *back = unescape(sb.buf ? sb.buf : "", sb.len, &back_len);
	if (!back)
		abort(); /* a raw quote or newline, or a broken escape */
	/* the output is valid UTF-8 */
	if (sb.len && !valid_utf8((const unsigned char *)sb.buf, sb.len))
		abort();
	/* valid UTF-8 input without NUL reads back exactly */
	strbuf again;
	sb_init(&again);
	expo_escape_label(&again, back, back_len);
	if (again.len != sb.len || memcmp(again.buf ? again.buf : "", sb.buf ? sb.buf : "", sb.len) != 0)
		abort(); /* escaping is not stable */
	if (valid_utf8(data, size) && (back_len != size || memcmp(back, data, size) != 0))
		abort(); /* a valid value must read back unchanged */
	sb_free(&again);
	free(back);
	sb_free(&sb);
	return 0;
}
