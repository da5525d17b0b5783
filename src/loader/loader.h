/*
 * The dynamic loader, simulated: which file would ld.so (glibc) open for dlopen("libX.so.N"),
 * and why. Everything is read through --root, so the answer is about the examined machine.
 *
 * Three parts:
 *   ldcache   a parser of /etc/ld.so.cache ("glibc-ld.so.cache1.1", also the old "ld.so-1.7.0"
 *             header with the new format hidden behind it), bounds-checked;
 *   ldconf    /etc/ld.so.conf with its `include` globs;
 *   loader    the search itself, in ld.so's order:
 *               1. DT_RPATH of the requesting object, only when it has no DT_RUNPATH
 *               2. LD_LIBRARY_PATH
 *               3. DT_RUNPATH of the requesting object ($ORIGIN, $LIB, $PLATFORM expanded)
 *               4. /etc/ld.so.cache
 *               5. the default directories (multiarch /lib/<triplet>, /usr/lib/<triplet>,
 *                  /lib64, /usr/lib64, /lib, /usr/lib)
 *             A name with a '/' is opened as is. A candidate that is an ELF file of another class
 *             or machine is skipped as ld.so skips it; a file that is not ELF at all still counts
 *             (ld.so would stop there with "invalid ELF header"): result.native says which.
 *
 * Not simulated: the RPATHs of the objects that loaded the requesting one, glibc-hwcaps
 * subdirectories, LD_PRELOAD, secure-execution (setuid) rules.
 *
 * Typical use:
 *     loader_system sys;
 *     loader_system_load(&sys);                      // ld.so.cache + ld.so.conf, once
 *     loader_ctx ctx = {.sys = &sys, .ld_library_path = getenv("LD_LIBRARY_PATH")};
 *     loader_result r;
 *     if (loader_resolve("libcudnn.so.9", &ctx, &r)) printf("%s via %s\n", r.path, loader_via_name(r.via));
 *     loader_system_free(&sys);
 */
#ifndef GPUVET_LOADER_H
#define GPUVET_LOADER_H
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/util.h"

/* ---- /etc/ld.so.cache ---- */

typedef struct ldcache_entry {
	char *soname; /* "libcudnn.so.9" */
	char *path;   /* "/usr/local/cuda-13.0/lib/libcudnn.so.9" */
	int32_t flags; /* 0x0303 libc6,x86-64; 0x0a03 libc6,AArch64; 0x0003 libc6 (32-bit) */
	uint64_t hwcap;
} ldcache_entry;

typedef struct ldcache {
	ldcache_entry *v;
	size_t n;
	const char *format; /* "new", "old+new" or "old" (static text) */
} ldcache;

/* Parses the bytes of an ld.so.cache. Returns 0, or -1 with a static error text in *err; entries
 * whose strings lie outside the file are dropped. At most 1<<20 entries. */
int ldcache_parse(const void *data, size_t size, ldcache *out, const char **err);
/* Reads and parses a cache file of the examined machine (NULL: /etc/ld.so.cache); 64 MiB at most. */
int ldcache_load(const char *abs_path, ldcache *out, const char **err);
void ldcache_free(ldcache *c);
/* The entry ld.so would use for a soname: the first one whose flags fit this host (libc6 with the
 * host's 64-bit ABI flag), entries without a hwcap first. NULL when none. */
const ldcache_entry *ldcache_lookup(const ldcache *c, const char *soname);
/* true when an entry's flags fit this host's ABI */
bool ldcache_entry_native(const ldcache_entry *e);

/* ---- /etc/ld.so.conf ---- */

/* Reads an ld.so.conf of the examined machine (NULL: /etc/ld.so.conf): its directories, in order,
 * without duplicates, `include` globs (relative to the including file's directory) followed up
 * to 8 levels deep; `hwcap` lines and relative directories are ignored. Problems met (missing
 * files, include loops, unreadable files) are appended to *problems when not NULL.
 * Returns the number of directories found, or -1 when the top file cannot be read. */
int ldconf_load(const char *abs_path, strlist *dirs, strlist *problems);
/* Parses the text of one file (no includes followed; they are appended to *includes when not
 * NULL, as written). For tests and the fuzzer. */
void ldconf_parse_text(const char *text, size_t len, strlist *dirs, strlist *includes);

/* ---- the search ---- */

typedef struct loader_system {
	ldcache cache;
	bool have_cache;
	const char *cache_error; /* why the cache could not be read (static text), NULL when read */
	strlist conf_dirs;       /* from ld.so.conf (what ldconfig indexed) */
	strlist conf_problems;
	strlist default_dirs;    /* ld.so's built-in trusted directories for this host */
	char triplet[32];        /* multiarch triplet, "x86_64-linux-gnu" */
} loader_system;

/* Reads /etc/ld.so.cache and /etc/ld.so.conf of the examined machine. Never fails: what cannot be
 * read is recorded (have_cache false, cache_error, conf_problems). */
void loader_system_load(loader_system *s);
void loader_system_free(loader_system *s);

typedef struct loader_ctx {
	const loader_system *sys;        /* NULL: no cache, built-in default directories only */
	const char *ld_library_path;     /* LD_LIBRARY_PATH's value; NULL when unset */
	/* The object asking (NULL fields for a plain dlopen from a program without RPATH/RUNPATH): */
	const char *origin;              /* directory of the requesting object, for $ORIGIN */
	const char *rpath;               /* its DT_RPATH (ignored when runpath is set) */
	const char *runpath;             /* its DT_RUNPATH */
} loader_ctx;

typedef enum {
	LOADER_VIA_NONE = 0,          /* not found */
	LOADER_VIA_SLASH,             /* the name has a '/': opened as is */
	LOADER_VIA_RPATH,
	LOADER_VIA_LD_LIBRARY_PATH,
	LOADER_VIA_RUNPATH,
	LOADER_VIA_CACHE,
	LOADER_VIA_DEFAULT,
} loader_via;

typedef struct loader_result {
	loader_via via;
	char path[PATH_MAX]; /* the file the loader opens, as named ("/usr/lib/x86_64-linux-gnu/libcuda.so.1") */
	char real[PATH_MAX]; /* that file with symlinks resolved (inside the root); "" when it dangles */
	char dir[PATH_MAX];  /* the search directory it was found in (after $ORIGIN expansion) */
	bool native;         /* an ELF file of this host's class and machine (false: not ELF at all) */
	int skipped_foreign; /* candidates skipped because of another ELF class or machine */
	bool cache_stale;    /* ld.so.cache named a file that does not exist */
} loader_result;

/* Finds the file the dynamic loader would open for soname. Returns true when found; out is always
 * filled (via LOADER_VIA_NONE when not found). */
bool loader_resolve(const char *soname, const loader_ctx *ctx, loader_result *out);
/* "rpath", "LD_LIBRARY_PATH", "runpath", "ld.so.cache", "default directory", "path", "not found" */
const char *loader_via_name(loader_via v);

/* Expands $ORIGIN/${ORIGIN}, $LIB/${LIB} and $PLATFORM/${PLATFORM} in one search-path entry.
 * Returns a malloc'd string, or NULL when the entry uses $ORIGIN and origin is NULL. */
char *loader_expand(const char *entry, const char *origin, const loader_system *sys);
/* Splits a search path (':' or ';' separated, as ld.so does) into entries; empty entries (the
 * current directory) are kept as "." so callers can report them. */
void loader_split_path(const char *path, strlist *out);
/* The same for LD_LIBRARY_PATH read on this machine about the examined one: each entry a path
 * of the examined machine (the --root prefix stripped; "." kept), appended to out, and returned
 * joined by ':' (malloc'd; NULL when path is NULL). */
char *loader_split_path_machine(const char *path, strlist *out);
/* ---- the toolkit's stubs directory ---- */

/* Whether dir is a link-time stubs directory (".../lib64/stubs", ".../targets/x86_64-linux/lib/
 * stubs", conda's "lib/stubs"): its libcuda.so, libnvidia-ml.so, libcublasLt.so... are
 * placeholders to link against, never to run with. */
bool loader_is_stubs_dir(const char *dir);
/* A colon-separated search path without its stubs entries (malloc'd; "" when nothing is left).
 * Every fix line that rewrites LD_LIBRARY_PATH passes through this. */
char *loader_path_without_stubs(const char *path);
#endif
