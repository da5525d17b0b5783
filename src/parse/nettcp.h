/*
 * The rows of the kernel's socket tables /proc/PID/net/tcp, tcp6, udp and udp6:
 *
 *   sl  local_address rem_address   st tx_queue:rx_queue tr:tm->when retrnsmt   uid  timeout inode
 *    0: 0100007F:74CB 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 81234 ...
 *
 * addresses as hex 32-bit words in host order, ports as hex. The job doctor reads them twice: what
 * a waiting thread's socket is connected to (sampler/waits.c) and a rank's rendezvous sockets
 * (sampler/rendezvous.c). Parsing only: no I/O, so it can be fuzzed.
 */
#ifndef GPUVET_PARSE_NETTCP_H
#define GPUVET_PARSE_NETTCP_H
#include <stdbool.h>
#include <stddef.h>

typedef struct net_row {
	char local[40], remote[40]; /* the hex addresses without their ports */
	unsigned local_port, remote_port;
	unsigned state;             /* the kernel's TCP state: 1 established, 10 listen (udp: 7 unconnected) */
	unsigned long long inode;   /* 0 for a socket the table shows without one (TIME_WAIT) */
} net_row;

/* The row of the line at *cursor, and *cursor moved past that line. False at the end; a line
 * that is not a row (the header, a truncated one) gives ok false and the walk goes on. */
bool net_row_next(const char **cursor, net_row *row, bool *ok);

/* An address of a row (local or remote) as text: "127.0.0.1", "[fd00:0:0:0:0:0:0:5]"; an IPv4
 * address mapped into IPv6 (::ffff:a.b.c.d) as IPv4; "?" when it is not 8 or 32 hex digits. */
void net_addr_text(const char *hex, bool v6, char *out, size_t n);
#endif
