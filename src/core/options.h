/*
 * Command-line options, declared once. Each command has one table of its options (name, the
 * value it takes, the values it accepts where they are a fixed set, the help text); from it come
 * getopt_long's arrays, the option lines of `--help`, and, through the generator
 * (tools/gen_cli.c), the man page's COMMANDS section and the bash, zsh and fish completions, so
 * none of them can drift from what the command parses (the `cli/generated` test compares the
 * checked-in files with what the tables generate).
 */
#ifndef GPUVET_CORE_OPTIONS_H
#define GPUVET_CORE_OPTIONS_H
#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* What an option's value (or a command's operands) is, for the completions. */
typedef enum {
	GV_VAL_NONE,    /* the option takes no value */
	GV_VAL_TEXT,    /* free text: nothing to offer */
	GV_VAL_NUMBER,  /* a number: nothing to offer */
	GV_VAL_FILE,    /* a file ("-" where the help says so) */
	GV_VAL_DIR,     /* a directory */
	GV_VAL_WORD,    /* one word of the option's fixed set */
	GV_VAL_LIST,    /* comma-separated words of the option's fixed set */
	GV_VAL_FINDING, /* !ID of a finding (gpuvet check --list-rules), or a fact expression */
	GV_VAL_COMMAND, /* a command line to run (the operands of `gpuvet run --`) */
} gv_value_kind;

/* The words of a fixed set, one at a time: NULL past the last. For sets that live in another
 * module's table (bench's groups, diag's tests), so that the table stays their one declaration. */
typedef const char *(*gv_word_fn)(size_t i);

/* flags */
enum {
	GV_OPT_OPERANDS = 1, /* `arg` names the operands that follow the option, not a value of its own
				(env --scan [DIR...]); getopt takes no value */
	GV_OPT_HIDDEN = 2,   /* parsed, never shown (an alias kept for old command lines) */
};

typedef struct gv_option {
	const char *name;   /* the long name, without "--"; "" for a group heading (help is its title) */
	int id;             /* getopt_long's value: a letter is also the short option (-v) */
	const char *arg;    /* the value's name in --help ("FILE"); NULL: no value */
	gv_value_kind kind;
	const char *const *words; /* GV_VAL_WORD/GV_VAL_LIST: the fixed set, NULL-terminated, or */
	gv_word_fn word_at;       /* ... the fixed set from another table */
	const char *help;   /* the help text; "{values}" in it is replaced by the fixed set */
	unsigned flags;
} gv_option;

/* A subcommand (history list, env use): one line of --help, a word for the completions. Several
 * lines may share a name (compare A B, compare --baseline NAME). */
typedef struct gv_subcommand {
	const char *name;
	const char *args; /* "ID|latest", or NULL */
	const char *help;
	gv_value_kind operands; /* what follows the name, for the completions */
	/* the command's own function for it (the first line of a name has it), or NULL */
	int (*run)(const void *ctx, int argc, char **argv);
} gv_subcommand;

typedef struct gv_command_cli {
	const char *name;             /* "check" */
	const char *summary;          /* one line, for gpuvet --help and the completions */
	const char *head;             /* the usage lines and the prose before the options */
	const char *subs_title;       /* "subcommands", or NULL for subcommands without a heading */
	const gv_subcommand *subs;    /* ended by {NULL}; NULL: none */
	const gv_option *opts;        /* ended by {NULL} */
	const char *tail;             /* after the options: examples, exit status */
	void (*help_more)(FILE *out); /* printed after tail (diag's tests and levels), or NULL */
	gv_value_kind operands;       /* the words after the options, for the completions */
	const char *getopt_prefix;    /* "+" where the options stop at the first operand */
} gv_command_cli;

/* Table rows. */
#define GV_OPT_GROUP(title) {"", 0, NULL, GV_VAL_NONE, NULL, NULL, title, 0}
#define GV_OPT_FLAG(name, id, help) {name, id, NULL, GV_VAL_NONE, NULL, NULL, help, 0}
#define GV_OPT_ARG(name, id, arg, kind, help) {name, id, arg, kind, NULL, NULL, help, 0}
#define GV_OPT_WORDS(name, id, arg, kind, words, help) {name, id, arg, kind, words, NULL, help, 0}
#define GV_OPT_WORD_FN(name, id, arg, kind, fn, help) {name, id, arg, kind, NULL, fn, help, 0}
#define GV_OPT_HELP GV_OPT_FLAG("help", 'h', "this text")
#define GV_OPT_END {NULL, 0, NULL, GV_VAL_NONE, NULL, NULL, NULL, 0}

/* The subcommand of that name that has a function, or NULL. */
const gv_subcommand *gv_subcommand_find(const gv_command_cli *c, const char *name);

/* The most options one command has, and the room for its arrays. */
#define GV_OPTIONS_MAX 64

/* getopt_long's arrays from the table: longopts (GV_OPTIONS_MAX + 1 entries) and shortopts
 * (":" after getopt_prefix, then every short letter, with ':' where it takes a value; 3 *
 * GV_OPTIONS_MAX + 4 bytes). */
void gv_getopt_arrays(const gv_command_cli *c, struct option *longopts, char *shortopts);

/* The option of getopt_long's value id, or NULL. */
const gv_option *gv_option_by_id(const gv_command_cli *c, int id);
/* The i-th word of an option's fixed set, NULL past the last. */
const char *gv_option_word(const gv_option *o, size_t i);
/* A value of an option with a fixed set: true when it is one of the set (every item of a
 * GV_VAL_LIST); otherwise prints "--opt: unknown value 'x' (a, b or c)" and returns false. */
bool gv_option_check(const gv_option *o, const char *value);
/* The fixed set as text, joined by sep ("," or ", "). Into buf; returns buf. */
const char *gv_option_words_text(const gv_option *o, const char *sep, char *buf, size_t size);

/* The whole --help text of a command (head, subcommands, options, tail, help_more), built once
 * per table and kept until exit. */
const char *gv_usage(const gv_command_cli *c);

/* The left column of an option's --help line: "-v, --verbose", "--junit FILE". Into buf. */
const char *gv_option_left(const gv_option *o, char *buf, size_t size);
/* The help text with {values} filled in. Into buf; returns buf. */
const char *gv_option_help(const gv_option *o, char *buf, size_t size);

/* The width --help wraps its option lines at. */
#define GV_HELP_WIDTH 100
#endif
