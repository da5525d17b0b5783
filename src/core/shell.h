/*
 * The one shell-quoting helper: every word that gpuvet prints for `eval`, for a script or for a
 * user to paste (`env use`, `fix`, the fix lines of findings) goes through it.
 *
 * A word of only [A-Za-z0-9/._:+=@%,-] is printed as is; anything else goes in single quotes,
 * a quote inside written '\''. That is safe for sh, dash, bash and zsh alike: nothing expands
 * inside single quotes ($(), backticks, $VAR, !, globs, blanks). What single quotes cannot make
 * safe is refused: control characters (a newline ends a comment line and starts a command when
 * the text is pasted or eval'ed into an interactive shell, an escape sequence rewrites the screen),
 * bytes that are not UTF-8 (a paste does not carry them), and the bidirectional-text controls (the
 * word shown is not the word run). A refused word has no shell form: say so, print no command.
 */
#ifndef GPUVET_CORE_SHELL_H
#define GPUVET_CORE_SHELL_H
#include <stdbool.h>
#include <stddef.h>

#include "core/util.h"

/* NULL when s can be quoted; else why not ("holds a newline", ...), a constant string. */
const char *shell_unquotable(const char *s);
/* Appends s as one shell word; false (sb unchanged) when it cannot be quoted. */
bool sb_add_shell_word(strbuf *sb, const char *s);
/* s as one shell word in buf; NULL when it cannot be quoted or does not fit. */
const char *shell_word(char *buf, size_t size, const char *s);
/* The text of a refusal, for a fix line or an error: "PATH cannot be given to a shell: it holds
 * a newline; rename it", the path shown through the text sanitizer. malloc'd. */
char *shell_refusal(const char *what, const char *s);
/* For a word inside a command line (an interpreter's path before "-m pip"): the quoted word, or
 * when it cannot be quoted " # " and the refusal, which turns the rest of the line into a shell
 * comment: pasted or sourced, it runs nothing. Into buf (cut to size); returns buf. */
const char *shell_word_or_comment(char *buf, size_t size, const char *what, const char *s);
/* A fix line that says why no command is given (shell_refusal). */
struct finding;
void finding_fix_refused(struct finding *x, const char *what, const char *s);
#endif
