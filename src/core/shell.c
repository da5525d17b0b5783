#include "core/shell.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/findings.h"
#include "core/text.h"

const char *shell_unquotable(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	while (n) {
		uint32_t cp;
		size_t len = utf8_decode(p, n, &cp);
		if (len == 0)
			return "it holds bytes that are not UTF-8";
		if (cp == '\n' || cp == '\r' || cp == 0x2028 || cp == 0x2029)
			return "it holds a line break";
		if (cp == 0x1b)
			return "it holds a terminal escape";
		if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
			return "it holds a control character";
		if (text_unsafe_cp(cp))
			return "it holds a bidirectional-text control";
		p += len, n -= len;
	}
	return NULL;
}

static bool plain(const char *s)
{
	if (!*s)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      strchr("/._:+=@%,-", *p)))
			return false;
	return true;
}

bool sb_add_shell_word(strbuf *sb, const char *s)
{
	if (shell_unquotable(s))
		return false;
	if (plain(s)) {
		sb_add(sb, s);
		return true;
	}
	sb_addc(sb, '\'');
	for (const char *p = s; *p; p++) {
		if (*p == '\'')
			sb_add(sb, "'\\''");
		else
			sb_addc(sb, *p);
	}
	sb_addc(sb, '\'');
	return true;
}

const char *shell_word(char *buf, size_t size, const char *s)
{
	strbuf sb;
	sb_init(&sb);
	bool ok = sb_add_shell_word(&sb, s) && sb.len < size;
	if (ok)
		memcpy(buf, sb.buf, sb.len + 1);
	sb_free(&sb);
	return ok ? buf : NULL;
}

char *shell_refusal(const char *what, const char *s)
{
	const char *why = shell_unquotable(s);
	char *shown = text_safe_dup(s);
	char *r = xasprintf("%s %s cannot be given to a shell safely: %s; rename it (gpuvet prints no command it "
			    "cannot quote)",
			    what, shown, why ? why : "it is too long");
	free(shown);
	return r;
}

const char *shell_word_or_comment(char *buf, size_t size, const char *what, const char *s)
{
	if (shell_word(buf, size, s))
		return buf;
	char *r = shell_refusal(what, s);
	char *line = xasprintf(" # %s:", r);
	text_safe(buf, size, line); /* cut whole characters and escapes: a cut one is not UTF-8 */
	free(line);
	free(r);
	return buf;
}

void finding_fix_refused(finding *x, const char *what, const char *s)
{
	char *r = shell_refusal(what, s);
	finding_fix(x, "%s", r);
	free(r);
}
