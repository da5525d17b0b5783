/* The text sanitizer and the shell-quoting helper on arbitrary bytes: sanitized text is always
 * safe and never longer than asked; a quoted word holds nothing unsafe and reads back, through a
 * POSIX shell's rules for single quotes, as exactly the input; JSON made safe still parses. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "core/shell.h"
#include "core/text.h"

/* What sh makes of one word built by sb_add_shell_word: plain characters and '...' runs; NULL
 * when the word holds anything else (which the helper must never produce). */
static char *sh_read_word(const char *w)
{
	strbuf sb;
	sb_init(&sb);
	sb_add(&sb, "");
	for (const char *p = w; *p;) {
		if (*p == '\'') {
			const char *e = strchr(p + 1, '\'');
			if (!e) {
				sb_free(&sb);
				return NULL;
			}
			sb_addn(&sb, p + 1, (size_t)(e - p - 1));
			p = e + 1;
		} else if (*p == '\\' && p[1] == '\'') {
			sb_addc(&sb, '\'');
			p += 2;
		} else if (strchr("/._:+=@%,-", *p) || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			   (*p >= '0' && *p <= '9')) {
			sb_addc(&sb, *p++);
		} else {
			sb_free(&sb);
			return NULL;
		}
	}
	return sb_steal(&sb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = xstrndup((const char *)data, size);
	/* the sanitizer */
	char *t = text_safe_dup(s);
	if (!text_is_safe(t))
		abort();
	if (text_is_safe(s) && strcmp(s, t) != 0)
		abort();
	size_t cap = size % 64 + 1;
	char *small = xmalloc(cap);
	text_safe(small, cap, s);
	if (strlen(small) >= cap || !text_is_safe(small))
		abort();
	free(small);
	/* the quoting helper */
	strbuf sb;
	sb_init(&sb);
	bool ok = sb_add_shell_word(&sb, s);
	if (ok != (shell_unquotable(s) == NULL))
		abort();
	if (ok) {
		if (!text_is_safe(sb.buf))
			abort();
		char *back = sh_read_word(sb.buf);
		if (!back || strcmp(back, s) != 0)
			abort();
		free(back);
	} else {
		char *r = shell_refusal("the path", s);
		if (!text_is_safe(r))
			abort();
		free(r);
		char buf[256];
		shell_word_or_comment(buf, sizeof(buf), "the path", s);
		if (strncmp(buf, " # ", 3) != 0 || !text_is_safe(buf))
			abort();
	}
	sb_free(&sb);
	/* JSON */
	cJSON *o = cJSON_CreateString(s);
	char *printed = cJSON_PrintUnformatted(o);
	char *safe = json_text_safe(printed);
	cJSON *back = cJSON_Parse(safe);
	if (!back || !cJSON_IsString(back))
		abort();
	if (text_is_safe(s) && strcmp(back->valuestring, s) != 0)
		abort();
	cJSON_Delete(back);
	free(safe);
	free(printed);
	cJSON_Delete(o);
	free(t);
	free(s);
	return 0;
}
