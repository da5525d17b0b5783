#include "nvidia/nvrmlog.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

/* Copies from p up to (not including) the first occurrence of stop, at most n - 1 bytes; false
 * when stop does not follow. */
static bool copy_until(const char *p, const char *stop, char *out, size_t n)
{
	const char *e = strstr(p, stop);
	if (!e || e == p || (size_t)(e - p) >= n)
		return false;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = '\0';
	str_sanitize(out);
	return true;
}

static bool parse_message(const char *t, nvrm_refusal *out)
{
	memset(out, 0, sizeof(*out));
	const char *p;
	if ((p = strstr(t, "The NVIDIA GPU ")) && strstr(p, "is not supported by the")) {
		p += strlen("The NVIDIA GPU ");
		if (!copy_until(p, " (PCI ID: ", out->pci, sizeof(out->pci)))
			return false;
		p = strstr(p, " (PCI ID: ") + strlen(" (PCI ID: ");
		if (!copy_until(p, ")", out->pci_id, sizeof(out->pci_id)))
			return false;
		p = strstr(p, "is not supported by the NVIDIA ");
		if (!p || !copy_until(p + strlen("is not supported by the NVIDIA "), " driver release", out->driver,
				      sizeof(out->driver)))
			return false;
		return !strchr(out->pci, ' ') && !strchr(out->driver, ' ');
	}
	if ((p = strstr(t, "The NVIDIA ")) && strstr(p, "Legacy drivers")) {
		p += strlen("The NVIDIA ");
		if (!copy_until(p, " GPU installed in this system is", out->gpu, sizeof(out->gpu)))
			return false;
		const char *b = strstr(p, "supported through the NVIDIA ");
		if (!b)
			return false;
		b += strlen("supported through the NVIDIA ");
		if (!isdigit((unsigned char)*b))
			return false;
		out->legacy_branch = atoi(b);
		const char *d = strstr(b, "The ");
		if (!d || !copy_until(d + 4, " NVIDIA driver will ignore", out->driver, sizeof(out->driver)))
			return false;
		return out->legacy_branch > 0 && out->legacy_branch < 10000 && !strchr(out->driver, ' ');
	}
	return false;
}

bool nvrm_scan_line(nvrm_scan *s, const char *line, size_t len, nvrm_refusal *out)
{
	const char *m = str_find_n(line, len, "NVRM:");
	if (!m)
		return false;
	const char *p = m + 5, *end = line + len;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	size_t n = (size_t)(end - p);
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\r' || p[n - 1] == '\t'))
		n--;
	/* a message starts with "The NVIDIA "; anything else continues the open one */
	if (n >= 11 && memcmp(p, "The NVIDIA ", 11) == 0) {
		s->text[0] = '\0';
		s->lines = 0;
	} else if (!s->lines) {
		return false;
	}
	size_t have = strlen(s->text);
	if (s->lines >= 8 || have + n + 2 >= sizeof(s->text)) {
		s->lines = 0;
		s->text[0] = '\0';
		return false;
	}
	if (have)
		s->text[have++] = ' ';
	memcpy(s->text + have, p, n);
	s->text[have + n] = '\0';
	s->lines++;
	if (!strstr(s->text, "driver release.") && !strstr(s->text, "Continuing probe") &&
	    !strstr(s->text, "will ignore this GPU"))
		return false;
	bool ok = parse_message(s->text, out);
	s->lines = 0;
	s->text[0] = '\0';
	return ok;
}
