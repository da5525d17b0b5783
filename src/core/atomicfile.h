/*
 * Writing a file whole or not at all, safely in a directory that others can write too. Every
 * file gpuvet writes under a name the user gives (report -o, check --junit, history export -o,
 * tune --save-raw) or into a shared directory (serve's textfile collector) goes through here.
 *
 * The content goes to a new temporary file in the file's own directory, made by mkstemp (an
 * unpredictable name, created exclusively: a link or a FIFO planted at a name gpuvet would use is
 * never opened, followed or waited on), given its mode with fchmod, written, fsync'ed, and renamed
 * over the name, which replaces whatever is there (a FIFO, an old file) and never writes through
 * it. Readers see the old file or the new one, never half of one. On any failure the temporary
 * file is removed and the old file is left as it was; a file-size limit (ulimit -f) makes the
 * write fail (SIGXFSZ is ignored from the first open on) instead of killing gpuvet with the
 * temporary file left behind.
 *
 * The name itself: a symbolic link there is refused ("use - for standard output", since
 * /dev/stdout is one), a character device (/dev/null, a terminal) is written in place, as it
 * cannot be replaced; a directory fails at the rename.
 *
 *	char err[512];
 *	atomic_file *a = atomic_file_open("report.html", 0666, err, sizeof(err));
 *	if (!a) { gv_error("%s", err); ... }
 *	fputs(page, atomic_file_stream(a));
 *	if (!atomic_file_commit(a, err, sizeof(err))) { gv_error("%s", err); ... }  // a is freed either way
 */
#ifndef GPUVET_CORE_ATOMICFILE_H
#define GPUVET_CORE_ATOMICFILE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct atomic_file atomic_file;

/* Starts writing path. mode: the new file's permission bits before the umask (0666 for a file
 * the user asked for, as fopen gives it; 0644 for one that another program reads); a regular file
 * being replaced keeps its own. NULL with err ("cannot write PATH: ...") when the name is refused
 * or the temporary file cannot be made. */
atomic_file *atomic_file_open(const char *path, unsigned mode, char *err, size_t errsize);
/* The stream to write the content to. */
FILE *atomic_file_stream(atomic_file *a);
/* Flushes, fsyncs and renames the temporary file over the name; false with err naming the file
 * and the reason, the temporary file removed and the old file untouched. Frees a. */
bool atomic_file_commit(atomic_file *a, char *err, size_t errsize);
/* Gives up: the temporary file is removed, the old file untouched. Frees a (NULL is fine). */
void atomic_file_abort(atomic_file *a);

/* The whole of data (len bytes) to path in one go: open, write, commit. */
bool atomic_file_write(const char *path, const void *data, size_t len, unsigned mode, char *err, size_t errsize);
#endif
