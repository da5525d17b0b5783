/*
 * Parsers of the environment variables that decide what a CUDA program sees and how PyTorch
 * behaves: CUDA_VISIBLE_DEVICES, TORCH_CUDA_ARCH_LIST, PYTORCH_(CUDA_)ALLOC_CONF.
 *
 * Pure functions over strings (no I/O, no getenv), so the env probe, the rules (which re-parse
 * the recorded raw value) and the fuzz target share one implementation. Every input is
 * untrusted: any length, any bytes.
 */
#ifndef GPUVET_ENVPARSE_H
#define GPUVET_ENVPARSE_H
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/util.h"

/* ---- CUDA_VISIBLE_DEVICES ------------------------------------------------------------ */

typedef enum {
	CVD_INDEX,    /* "0", "12" */
	CVD_GPU_UUID, /* "GPU-8932f937-d72c-..." or a prefix of one ("GPU-8932f937") */
	CVD_MIG_UUID, /* "MIG-<uuid>" (R470+) or the older "MIG-GPU-<uuid>/<gi>/<ci>" */
	CVD_NEGATIVE, /* "-1": the usual way to hide every GPU */
	CVD_EMPTY,    /* an empty entry, as in "0,,1" */
	CVD_INVALID,  /* anything else: words, control characters, "GPU-" alone */
} cvd_kind;

#define CVD_TEXT_MAX 96 /* a full MIG UUID is 40 characters; longer entries are cut */

typedef struct cvd_entry {
	cvd_kind kind;
	long long index;         /* CVD_INDEX: the value; -1 when it does not fit an int */
	bool spaces;             /* blanks around the entry (trimmed here) */
	char text[CVD_TEXT_MAX]; /* the entry, trimmed, non-printable bytes as '?' */
} cvd_entry;

typedef struct cvd_list {
	cvd_entry *v;
	size_t n;     /* entries stored (at most the max given to cvd_parse) */
	size_t total; /* entries in the string */
	bool spaces;  /* some entry had blanks around it */
} cvd_list;

/* Splits at ',' and classifies each entry. An empty string gives zero entries (which CUDA
 * reads as "no GPU"); a NULL string too. Stores at most max_entries. */
void cvd_parse(const char *s, size_t max_entries, cvd_list *out);
void cvd_free(cvd_list *l);
const char *cvd_kind_name(cvd_kind k);

/* The GPUs of the machine, for resolving the list the way CUDA does. */
typedef struct cvd_system {
	int ngpus;                  /* -1 when unknown (no NVML): indexes are not range-checked */
	const char *const *uuids;   /* ngpus entries ("GPU-..."), NULL entries allowed */
	size_t nmig;
	const char *const *mig_uuids; /* nmig entries ("MIG-...") */
} cvd_system;

typedef enum {
	CVD_OK,
	CVD_STOP_EMPTY,       /* an empty entry */
	CVD_STOP_NEGATIVE,    /* -1 and the like */
	CVD_STOP_INVALID,     /* not an index or UUID */
	CVD_STOP_RANGE,       /* index >= number of GPUs */
	CVD_STOP_UNKNOWN,     /* UUID matches no GPU / MIG device */
	CVD_STOP_AMBIGUOUS,   /* UUID prefix matches several GPUs */
	CVD_STOP_DUPLICATE,   /* the same GPU again: PyTorch then sees no GPU at all */
	CVD_STOP_MIXED,       /* an index after UUIDs or a UUID after indexes */
} cvd_stop;

typedef struct cvd_resolution {
	size_t visible;      /* entries CUDA honours: those before the first bad one */
	long stop_at;        /* index of the first bad entry, -1 when none */
	cvd_stop stop;       /* why it stops there */
	size_t bad;          /* bad entries in total (each judged on its own) */
	size_t mig_entries;  /* MIG entries among the visible ones */
	char *corrected;     /* the list with every bad entry dropped (malloc'd, may be "") */
	cvd_stop *status;    /* per stored entry: CVD_OK or why it is bad (duplicates included) */
} cvd_resolution;

/* CUDA stops reading the list at the first entry it cannot use: the entries before it are
 * visible, the rest is ignored. Resolves each entry against sys; free with cvd_resolution_free. */
void cvd_resolve(const cvd_list *l, const cvd_system *sys, cvd_resolution *out);
void cvd_resolution_free(cvd_resolution *r);
const char *cvd_stop_text(cvd_stop s);
/* Judges one entry on its own (not counting duplicates); *match says which device it names
 * (CVD_UNRESOLVED when that cannot be known). */
#define CVD_UNRESOLVED LLONG_MIN
cvd_stop cvd_entry_check(const cvd_entry *e, const cvd_system *sys, long long *match);

/* ---- TORCH_CUDA_ARCH_LIST ------------------------------------------------------------ */

typedef struct arch_entry {
	int major, minor;
	char variant; /* 0, 'a' (arch-specific, 9.0a) or 'f' (family, 10.0f) */
	bool ptx;     /* "+PTX": PTX embedded too, JIT-compiled for newer GPUs */
	bool known;   /* a compute capability that exists */
} arch_entry;

typedef struct arch_list {
	arch_entry *v;
	size_t n;
	strlist invalid; /* entries torch rejects ("Unknown CUDA arch"), sanitized and capped */
	bool native;     /* "native": the visible GPUs' own capabilities */
	bool empty;      /* empty or blank: torch treats it as unset */
} arch_list;

/* Splits at ';' and ' ' as torch.utils.cpp_extension does, expanding the named architectures
 * ("Ampere" -> 8.0;8.6+PTX). Entries are capped at 256. */
void arch_list_parse(const char *s, arch_list *out);
void arch_list_free(arch_list *l);

typedef enum {
	ARCH_NOT_COVERED, /* "no kernel image is available for execution on the device" */
	ARCH_PTX_JIT,     /* only PTX of an older capability: JIT-compiled at first load */
	ARCH_OLDER_SASS,  /* SASS of the same major and a lower minor: runs, not tuned */
	ARCH_EXACT,       /* SASS for exactly this capability */
} arch_cover;

arch_cover arch_list_covers(const arch_list *l, int major, int minor);
/* "8.6", "9.0a+PTX" into buf. */
const char *arch_entry_text(const arch_entry *e, char *buf, size_t n);

/* ---- PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF ------------------------------------- */

typedef struct alloc_conf {
	strlist keys;   /* keys recognised, in order */
	strlist errors; /* what PyTorch would refuse, one sentence each (capped at 16) */
	strlist notes;  /* accepted but worth knowing (options a backend ignores) */
} alloc_conf;

/* The keys PyTorch's CUDA caching allocator accepts (NULL-terminated); older releases know
 * fewer of them. */
extern const char *const alloc_conf_keys[];

/* Returns true when PyTorch would accept the string. Mirrors c10's ConfigTokenizer: tokens are
 * split at ',' ':' '[' ']', blanks are dropped. */
bool alloc_conf_parse(const char *s, alloc_conf *out);
void alloc_conf_free(alloc_conf *c);

/* ---- debugging and profiling variables ------------------------------------------------ */

typedef enum {
	EV_NONEMPTY, /* set to anything */
	EV_NONZERO,  /* an integer other than 0 ("1") */
	EV_ZERO,     /* exactly "0" (NVIDIA_TF32_OVERRIDE=0, NCCL_NVLS_ENABLE=0) */
	EV_WORDS,    /* one of the '|'-separated words of arg, case-insensitive */
} env_match;

typedef struct env_debug_var {
	const char *name;
	env_match match;
	const char *arg; /* EV_WORDS */
	int sev;         /* 0 info, 1 warn */
	const char *why; /* what it costs */
} env_debug_var;

/* Variables meant for debugging, profiling or working around a fault, that slow or change
 * every run when left set. NULL-name terminated. */
extern const env_debug_var env_debug_vars[];
/* Whether value (NULL: unset) activates v. */
bool env_debug_active(const env_debug_var *v, const char *value);

/* ---- NCCL (and Gloo) variables ------------------------------------------------------------- */

typedef enum {
	NCCL_IFLIST, /* a list of interfaces or adapters that must exist here */
	NCCL_OFF,    /* turns a transport off (what: the path, judged against the hardware) */
	NCCL_FORCED, /* forces a choice NCCL's tuning would make, or logs */
} nccl_var_kind;

typedef struct env_nccl_var {
	const char *name;
	nccl_var_kind kind;
	env_match match;  /* when it is active */
	const char *arg;  /* EV_WORDS words; for NCCL_IFLIST "exact": a plain list of exact names (Gloo) */
	const char *what; /* NCCL_IFLIST: "net" or "ib"; NCCL_OFF: "p2p", "shm", "ib" */
	int sev;          /* 0 info, 1 warn, 2 fail */
	const char *why;  /* what it does, and what it costs */
} env_nccl_var;

/* The NCCL variables gpuvet judges (one table: the probe records them, the nccl.* rules read
 * it). NULL-name terminated. */
extern const env_nccl_var env_nccl_vars[];

/* An interface list as NCCL parses NCCL_SOCKET_IFNAME and NCCL_IB_HCA: a leading '^' excludes,
 * then a leading '=' makes the names exact (otherwise prefixes: "eth" selects eth0 and eth1),
 * entries split at ',', a ":port" suffix ignored. exact_only: Gloo's plain list of exact names. */
typedef struct nccl_iflist {
	bool exclude, exact;
	strlist names;
} nccl_iflist;
void nccl_iflist_parse(const char *s, bool exact_only, nccl_iflist *out);
/* Whether entry k names ifname (prefix or exact match). */
bool nccl_iflist_entry_matches(const nccl_iflist *l, size_t k, const char *ifname);
/* Whether NCCL would use ifname under this list (the '^' inversion applied). */
bool nccl_iflist_selects(const nccl_iflist *l, const char *ifname);
void nccl_iflist_free(nccl_iflist *l);
#endif
