#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util.h"
#include "nvidia/xidlog.h"
#include "parse/klog.h"

bool xid_parse_line(const char *line, size_t len, int year_hint, xid_line *out)
{
	memset(out, 0, sizeof(*out));
	out->time = -1;
	out->boot_us = -1;
	const char *x = str_find_n(line, len, "NVRM: Xid (");
	if (!x)
		return false;
	const char *end = line + len;
	const char *p = x + strlen("NVRM: Xid (");
	const char *close = NULL;
	for (const char *q = p; q < end && q - p < 64; q++)
		if (*q == ')') {
			close = q;
			break;
		}
	if (!close || close + 1 >= end || close[1] != ':')
		return false;
	const char *dev = p;
	if ((size_t)(close - dev) >= 4 && memcmp(dev, "PCI:", 4) == 0)
		dev += 4;
	size_t dn = (size_t)(close - dev);
	if (dn >= sizeof(out->pci))
		dn = sizeof(out->pci) - 1;
	memcpy(out->pci, dev, dn);
	out->pci[dn] = '\0';
	str_sanitize(out->pci);
	p = close + 2;
	while (p < end && *p == ' ')
		p++;
	if (p >= end || !isdigit((unsigned char)*p))
		return false;
	long code = 0;
	int digits = 0;
	while (p < end && isdigit((unsigned char)*p) && digits < 6) {
		code = code * 10 + (*p - '0');
		p++, digits++;
	}
	if (p < end && isdigit((unsigned char)*p))
		return false; /* absurdly long number */
	out->code = (int)code;
	while (p < end && (*p == ',' || *p == ' '))
		p++;
	size_t mn = (size_t)(end - p);
	while (mn && (p[mn - 1] == '\n' || p[mn - 1] == '\r'))
		mn--;
	if (mn >= sizeof(out->message))
		mn = sizeof(out->message) - 1;
	memcpy(out->message, p, mn);
	out->message[mn] = '\0';
	str_sanitize(out->message);

	/* the time, from whatever prefix this log uses */
	klog_time(line, (size_t)(x - line), year_hint, &out->time, &out->boot_us);
	return true;
}
