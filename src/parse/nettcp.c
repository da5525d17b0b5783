#include "parse/nettcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "0100007F:74CB" into its address and its port; false when either part is missing */
static bool split_endpoint(const char *field, char *addr, size_t n, unsigned *port)
{
	const char *colon = strchr(field, ':');
	if (!colon || colon == field || (size_t)(colon - field) >= n || !colon[1])
		return false;
	memcpy(addr, field, (size_t)(colon - field));
	addr[colon - field] = '\0';
	char *end;
	unsigned long p = strtoul(colon + 1, &end, 16);
	if (*end || p > 0xffff)
		return false;
	*port = (unsigned)p;
	return true;
}

bool net_row_next(const char **cursor, net_row *row, bool *ok)
{
	const char *line = *cursor;
	if (!line || !*line)
		return false;
	const char *nl = strchr(line, '\n');
	*cursor = nl ? nl + 1 : line + strlen(line);
	memset(row, 0, sizeof(*row));
	/* sscanf stops at the line's end only by chance: bound it to this line */
	char buf[512];
	size_t len = nl ? (size_t)(nl - line) : strlen(line);
	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	memcpy(buf, line, len);
	buf[len] = '\0';
	char local[48], remote[48];
	*ok = sscanf(buf, " %*s %47[0-9A-Fa-f:] %47[0-9A-Fa-f:] %x %*s %*s %*s %*s %*s %llu", local, remote, &row->state,
		     &row->inode) == 4 &&
	      split_endpoint(local, row->local, sizeof(row->local), &row->local_port) &&
	      split_endpoint(remote, row->remote, sizeof(row->remote), &row->remote_port);
	return true;
}

void net_addr_text(const char *hex, bool v6, char *out, size_t n)
{
	unsigned w[4] = {0};
	int words = v6 ? 4 : 1;
	if (strlen(hex) != (size_t)(8 * words) || strspn(hex, "0123456789abcdefABCDEF") != strlen(hex)) {
		snprintf(out, n, "?");
		return;
	}
	for (int i = 0; i < words; i++) {
		char part[9];
		memcpy(part, hex + 8 * i, 8);
		part[8] = '\0';
		w[i] = (unsigned)strtoul(part, NULL, 16);
	}
	unsigned char b[16];
	for (int i = 0; i < words; i++)
		for (int k = 0; k < 4; k++)
			b[4 * i + k] = (unsigned char)(w[i] >> (8 * k)); /* each word little-endian */
	if (!v6 || (w[0] == 0 && w[1] == 0 && w[2] == 0xffff0000u)) { /* ::ffff:a.b.c.d */
		const unsigned char *a = v6 ? b + 12 : b;
		snprintf(out, n, "%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
		return;
	}
	snprintf(out, n, "[%x:%x:%x:%x:%x:%x:%x:%x]", b[0] << 8 | b[1], b[2] << 8 | b[3], b[4] << 8 | b[5],
		 b[6] << 8 | b[7], b[8] << 8 | b[9], b[10] << 8 | b[11], b[12] << 8 | b[13], b[14] << 8 | b[15]);
}
