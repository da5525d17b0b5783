/*
 * Xid lines of the NVIDIA kernel driver, as the kernel log has them:
 *
 *   NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python3, GPU has fallen off the bus.
 *   NVRM: Xid (0000:01:00): 13, Graphics Exception: ...          (older drivers)
 *
 * with whatever prefix the log adds (syslog date, ISO 8601 time, "[ 123.456]", a /dev/kmsg
 * record header "4,1234,5678901,-;"). Parsing only: no I/O, so it can be fuzzed.
 */
#ifndef GPUVET_NVIDIA_XIDLOG_H
#define GPUVET_NVIDIA_XIDLOG_H
#include <stdbool.h>
#include <stddef.h>

typedef struct xid_line {
	int code;           /* the Xid number */
	char pci[32];       /* "0000:18:00" as printed (without "PCI:") */
	char message[256];  /* the text after "CODE, " (sanitised, may be empty) */
	long long time;     /* seconds since the epoch, -1 when the line carries no usable time */
	long long boot_us;  /* /dev/kmsg records: microseconds since boot, -1 otherwise */
} xid_line;

/* Parses one log line (len bytes, not necessarily NUL-terminated). Returns false when it is not
 * an Xid line. year_hint: the year for syslog dates that carry none ("Nov 29 10:00:00"). */
bool xid_parse_line(const char *line, size_t len, int year_hint, xid_line *out);
#endif
