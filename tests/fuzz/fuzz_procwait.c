/* The job doctor's readers of /proc and of py-spy (src/sampler/waits.h, jobcpu.h, pystack.h):
 * a thread's syscall line, /proc/net/tcp and tcp6 tables (parse/nettcp.h, the rendezvous's sockets), CPU lists, cgroup cpu.max, /proc/stat,
 * a thread's status (voluntary_ctxt_switches) and py-spy's dump text. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse/nettcp.h"
#include "sampler/jobcpu.h"
#include "sampler/pystack.h"
#include "sampler/rendezvous.h"
#include "sampler/waits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	long nr;
	unsigned long long args[6];
	if (wait_parse_syscall(s, &nr, args)) {
		int fd_arg;
		(void)wait_syscall_name(nr, &fd_arg);
		if (fd_arg < -1 || fd_arg > 5)
			abort();
	}
	char peer[96] = "";
	(void)wait_tcp_peer(s, size, size & 1, peer, sizeof(peer));
	if (strlen(peer) >= sizeof(peer))
		abort();
	const char *cur = s;
	net_row r;
	bool ok;
	while (net_row_next(&cur, &r, &ok)) {
		if (ok && (r.local_port > 0xffff || r.remote_port > 0xffff || strlen(r.local) >= sizeof(r.local)))
			abort();
		char addr[64];
		net_addr_text(r.remote, size & 2, addr, sizeof(addr));
		if (strlen(addr) >= sizeof(addr))
			abort();
	}
	unsigned long long ino[2] = {size, 1};
	dist_sock socks[4];
	if (dist_sockets_parse(s, ino, 2, socks, 4) > 4)
		abort();
	(void)wait_classify(size ? s[0] : 0, s, s, (mode_t)(size & 0170000), s);
	unsigned char mask[JOBCPU_MAX_CPUS / 8];
	int n = cpu_list_parse(s, mask, sizeof(mask));
	if (n > JOBCPU_MAX_CPUS)
		abort();
	double q = cpu_max_parse(s);
	if (!isnan(q) && !(q > 0))
		abort();
	unsigned long long vol;
	(void)proc_status_vol_switches(s, &vol);
	unsigned long long ticks, start;
	if (proc_stat_starttime(s, &start) && !proc_stat_ticks(s, &ticks))
		abort(); /* a stat line with field 22 has fields 14 and 15 */
	unsigned long long idle[64];
	if (cpu_stat_idle(s, idle, 64) > 64)
		abort();
	pystack p;
	(void)pystack_parse(s, &p);
	if (p.n > PYSTACK_MAX_FRAMES)
		abort();
	free(s);
	return 0;
}
