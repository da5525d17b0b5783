/*
 * What a thread of a job waits on, read from /proc through --root, never by stopping it or
 * attaching to it: its state (/proc/PID/task/TID/stat), the kernel function it sleeps in
 * (wchan), the system call and its arguments (syscall: readable as root or, where Yama allows,
 * as the process's user) and the file descriptor that call names (/proc/PID/fd/N). From those a
 * kind (a file, a socket, a pipe, the GPU device, a lock, a sleep, ...) and, at the end of a
 * window, the words for it: the file's path, the socket's peer (/proc/PID/net/tcp, tcp6, udp,
 * unix), the job's process at a pipe's other end.
 *
 * The parsing and the classification are pure (tests give them lines); the readers go through
 * sysroot, so a scenario's tree holds a fake /proc/PID/task/TID/{stat,wchan,syscall} and
 * /proc/PID/fd/N links.
 */
#ifndef GPUVET_SAMPLER_WAITS_H
#define GPUVET_SAMPLER_WAITS_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "sampler/job.h"

typedef enum {
	WAIT_RUNNING = 0, /* on a CPU or runnable: not waiting */
	WAIT_FILE,        /* a read, write or sync on a file (storage) */
	WAIT_DISK,        /* uninterruptible sleep without a known call (storage, or a driver) */
	WAIT_SOCKET,      /* a socket: network, another rank, a server */
	WAIT_PIPE,        /* a pipe or FIFO (the DataLoader's workers) */
	WAIT_GPU,         /* the NVIDIA driver (/dev/nvidia*: an ioctl, a synchronize) */
	WAIT_DEVICE,      /* another device */
	WAIT_LOCK,        /* a futex: a lock, a condition, a queue, the GIL */
	WAIT_POLL,        /* poll, select or epoll on several descriptors */
	WAIT_SLEEP,       /* nanosleep, pause: time.sleep */
	WAIT_CHILD,       /* wait4, waitid: a child process */
	WAIT_OTHER,       /* another call */
	WAIT_UNKNOWN,     /* sleeping, neither call nor wchan readable */
	WAIT_NKINDS
} wait_kind;
/* "running", "file", "disk", "socket", "pipe", "gpu", "device", "lock", "poll", "sleep", "child", "other", "unknown" */
const char *wait_kind_name(wait_kind k);

typedef struct thread_wait {
	char state;       /* stat's state: R, S, D, ...; 0 when gone */
	long nr;          /* the system call; -1 in user space (running), -2 unknown (unreadable) */
	char call[24];    /* its name ("read"), "" unknown */
	wait_kind kind;
	int fd;           /* the descriptor the call names, -1 none */
	char link[160];   /* that descriptor's link ("/data/x.tar", "socket:[123]", "pipe:[45]"), "" */
	char wchan[48];   /* "pipe_read", "" unknown */
	bool fault;       /* asleep (D) outside any system call: in a page fault, which reads a
			   * memory-mapped file (np.memmap, Arrow datasets, torch.load(mmap=True)) or swap */
} thread_wait;

/* How often a sleeping thread's syscall file is read before its "running" answer is kept. */
#define WAIT_SYSCALL_TRIES 4
/* At most this many of a process's descriptors are looked at for its open data files. */
#define WAIT_OPEN_FILES_SCAN 4096

/* What the thread does now. False when it is gone. */
bool thread_wait_read(unsigned pid, unsigned tid, thread_wait *out);

/* --- pure parts --- */
/* A syscall file's line: "running" (nr -1), "-1 SP PC" (nr -1: not in a call), "NR A1..A6 SP PC".
 * False when it does not parse. */
bool wait_parse_syscall(const char *line, long *nr, unsigned long long args[6]);
/* The name of system call nr on this architecture and which argument is a file descriptor
 * (-1 none); NULL when not one the doctor names. */
const char *wait_syscall_name(long nr, int *fd_arg);
/* The number of a named call on this architecture; -1 when unknown (tests write syscall files). */
long wait_syscall_nr(const char *name);
/* The kind from the state, the call's name ("" unknown), the descriptor's link ("" none) with the
 * type of what it points to (S_IFREG, S_IFIFO, S_IFCHR; 0 unknown) and the wchan ("" unknown). A
 * poll on one descriptor (a link with poll or ppoll) is a wait on what the descriptor is where it
 * is a socket, a pipe, the GPU driver or a device. */
wait_kind wait_classify(char state, const char *call, const char *link, mode_t link_type, const char *wchan);

/* Words for what the thread waits on (into out): the file's path, "TCP to 10.0.0.5:29500", "a pipe
 * to pid 4250 (python)", "/dev/nvidia0"; "" when nothing to add. j names the job's processes for
 * a pipe's other end. */
void wait_describe(const job *j, unsigned pid, const thread_wait *w, char *out, size_t n);
/* A thread caught waiting on storage but never in its call (each read ends before the syscall
 * file is read): the process's open data files as words, "its open file /data/x.tar (1.0 GiB)" or
 * "its open files /a (2.0 GiB), /b (1.0 GiB) and 3 more", the largest first; "" when none. Data
 * files: regular files opened read-only outside /dev, /proc and /sys, not shared libraries. */
void wait_open_files(unsigned pid, char *out, size_t n);
/* A thread in a page fault: the data files the process has mapped (/proc/PID/maps), as words,
 * "its memory-mapped file /data/x.arrow (2.0 GiB)", by the bytes mapped, the largest first; "" when
 * none. Data files as for wait_open_files, outside the system's own (/usr, /etc, /lib), not
 * executable mappings. */
void wait_mapped_files(unsigned pid, char *out, size_t n);
/* The same from a maps file's text. Pure. */
void wait_maps_words(const char *maps, size_t len, char *out, size_t n);
/* The data file a storage wait (WAIT_FILE, WAIT_DISK) reads, for the storage it is on
 * (sampler/mounts.h): the descriptor's file, else in a page fault the largest mapped data file,
 * else the largest open one (as the words above). False when there is none. */
bool wait_data_file(unsigned pid, const thread_wait *w, char *path, size_t n);

/* A thread that waits for a connection or in an event loop (epoll) that watches a listening TCP
 * socket: that socket's port (a server waiting for requests: vLLM, a FastAPI model server); 0
 * when it is none. */
unsigned wait_listen_port(unsigned pid, const thread_wait *w);
/* The port of the listening socket with this inode in a tcp or tcp6 table's text; 0 none. Pure. */
unsigned wait_listen_port_in(const char *table, unsigned long long inode);
/* A thread that waits on a connected TCP socket: the peer's port (443: an HTTPS server); 0 when it
 * is none. */
unsigned wait_peer_port(unsigned pid, const thread_wait *w);
/* The peer's port of the established socket with this inode in a tcp or tcp6 table's text; 0
 * none. Pure. */
unsigned wait_peer_port_in(const char *table, unsigned long long inode);
/* Whether a descriptor's link is a terminal (/dev/pts/N, /dev/ttyN, /dev/tty, /dev/console). */
bool wait_terminal(const char *link);
/* What kind of interactive session a process is, by its command line (NUL-separated, len
 * bytes): "a Jupyter kernel" (ipykernel, Colab's kernel), "an IPython shell"; NULL when none. */
const char *wait_interactive(const char *cmdline, size_t len);

/* A peer from a /proc/net/tcp or tcp6 table's text: the remote "ADDR:PORT" of the socket with
 * this inode (into out; "listening on port P" when it has none). False when absent. Pure. */
bool wait_tcp_peer(const char *table, unsigned long long inode, bool v6, char *out, size_t n);

/* Whether a thread is one of a library's own service threads (CUDA's event and callback
 * threads, PyTorch's autograd engine, NCCL watchdogs, the rendezvous store, thread pools): they
 * wait for the job's work, so their waits never explain why the job waits. Its words ("a CUDA
 * driver thread"), or NULL for a thread of the job's own code. Pure. */
const char *wait_service_thread(const char *comm);

/* Whether a process compiles kernels: a thread named as a compiler's (cc1plus, cc1, ptxas, nvcc,
 * cicc, as, ld, collect2, fatbinary, nvlink: what torch.compile's Inductor and Triton, and a CUDA
 * extension's JIT build, run), or a command line of Inductor's compile worker pool
 * (torch/_inductor/compile_worker). comm: a thread's name; cmdline: the NUL-separated command line
 * (len bytes; NULL when unread). Pure. */
bool wait_compile_process(const char *comm, const char *cmdline, size_t len);

/* Whether we may read a process's waits: as root or as its user (uid from /proc/PID/status). */
bool wait_permitted(unsigned euid, long proc_uid);
/* The effective uid of a process (/proc/PID/status); -1 unknown. */
long wait_proc_uid(unsigned pid);
#endif
