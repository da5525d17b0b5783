/*
 * Whether a process of a job is a rank of a torch.distributed job, and how far its rendezvous
 * got, from /proc alone (through sysroot): the launcher's variables in its environment (RANK,
 * WORLD_SIZE, MASTER_ADDR, MASTER_PORT: torchrun, srun scripts, DeepSpeed and Accelerate set
 * them), a rendezvous store's thread in it (PyTorch names the TCPStore's server thread
 * pt_tcpstore or pt_tcpstore_uv: rank 0 hosts it), the port that store listens on and how many
 * ranks are connected to it (its accepted TCP connections), and whether it holds a connection
 * to the master's port.
 *
 * A rank that waits for the others sleeps or polls while its GPU idles: without this the doctor
 * would name "a sleep" (rank 0 of init_process_group sleeps between its looks at the store).
 * The parsers are pure (tests give them text); dist_rank_read reads what only root or the
 * process's own user may read, and leaves the rest unknown.
 */
#ifndef GPUVET_SAMPLER_RENDEZVOUS_H
#define GPUVET_SAMPLER_RENDEZVOUS_H
#include <stdbool.h>
#include <stddef.h>

typedef struct dist_rank {
	bool known;            /* any sign of a distributed job below */
	int rank, world;       /* RANK and WORLD_SIZE; -1 unknown */
	char master[96];       /* "MASTER_ADDR:MASTER_PORT" as the environment gives them; "" unknown */
	unsigned master_port;  /* MASTER_PORT; 0 unknown */
	bool hosts_store;      /* a thread of the rendezvous store runs in the process */
	unsigned store_port;   /* the TCP port that store listens on; 0 unknown */
	int store_clients;     /* connections it has accepted (every rank's, its own included); -1 unknown */
	bool to_master;        /* an established TCP connection to master_port (or to store_port) */
} dist_rank;

/* Everything unknown. */
void dist_rank_init(dist_rank *d);

/* --- pure parts --- */
/* The launcher's variables from /proc/PID/environ's text (NUL-separated NAME=value). */
void dist_env_parse(const char *environ, size_t len, dist_rank *d);
/* Whether a thread name is the rendezvous store's server thread. */
bool dist_store_thread(const char *comm);

/* One row of /proc/net/tcp or tcp6 that belongs to the process (by its socket inodes). */
typedef struct dist_sock {
	unsigned local_port, remote_port;
	unsigned state; /* the kernel's TCP state: 1 established, 10 listen */
} dist_sock;
/* The rows of a tcp table whose inode is one of inodes[0..n): into out (at most max); how many. */
size_t dist_sockets_parse(const char *table, const unsigned long long *inodes, size_t n, dist_sock *out, size_t max);
/* From the process's sockets: the store's port (master_port when it listens there, else its only
 * listening port), the connections accepted on it, a connection to the master's port. */
void dist_from_sockets(const dist_sock *s, size_t n, dist_rank *d);

/* --- the reader --- */
/* What pid shows of the above (its environment, its threads' names, its TCP sockets). */
void dist_rank_read(unsigned pid, dist_rank *d);
#endif
