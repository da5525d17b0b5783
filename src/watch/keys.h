/*
 * The live view's keys: one table drives what each key does, the help overlay, the footer and
 * the key list of `gpuvet watch --help` and the man page, so none of them can drift.
 *
 * The bindings follow nvtop and nvitop where they have one: h and ? for help and "any key
 * closes it" (nvitop), F1 (htop), q, Esc and F10 to quit (nvtop), , and . (and < >) for the
 * previous and next sort column and / to reverse it (nvitop), + and - for ascending and
 * descending (nvtop), F6 for the sort column (nvtop opens a menu there; here it is the next
 * column). The graphs' span is { and }: nvtop's + and - sort, so they no longer change it.
 */
#ifndef GPUVET_WATCH_KEYS_H
#define GPUVET_WATCH_KEYS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "sampler/job.h"
#include "sampler/snapshot.h"
#include "watch/proc_table.h"

/* What the keys change: the state of the view, apart from the samples. */
typedef struct watch_ui {
	proc_col_id sort;
	bool descending;
	int sel;      /* the selected GPU's index, -1 none: every GPU's processes */
	int scroll;   /* the first GPU row shown (the layout keeps the selection in view) */
	double span;  /* seconds of history in the graphs */
	bool paused;
	bool help;    /* the help overlay is up: the next key closes it */
	bool quit;
} watch_ui;

/* The view as it starts: sorted by GPU memory, biggest first; every GPU; 5 minutes of history. */
void watch_ui_init(watch_ui *ui);

typedef enum {
	WA_NONE, /* not a key of the table */
	WA_HELP,
	WA_CLOSE_HELP, /* any key while the help is up */
	WA_QUIT,
	WA_UP,
	WA_DOWN,
	WA_ALL,
	WA_SORT_NEXT,
	WA_SORT_PREV,
	WA_SORT_REVERSE,
	WA_SORT_ASC,
	WA_SORT_DESC,
	WA_PAUSE,
	WA_SPAN_LONGER,
	WA_SPAN_SHORTER,
} watch_action;

typedef struct watch_key {
	int keys[4]; /* curses key codes; 0 ends the list */
	watch_action action;
	const char *what;   /* the help's text */
	const char *footer; /* the footer's short label, NULL: in the help only */
} watch_key;

extern const watch_key watch_keys[];
extern const size_t watch_nkeys;

/* "h ? F1": a key's names as the help shows them. */
const char *watch_key_names(const watch_key *k, char *buf, size_t size);
/* The footer: every key with a footer label, in table order. */
const char *watch_footer(char *buf, size_t size);
/* Applies a key to the view (the snapshot and job for the GPU selection; either may be NULL)
 * and returns what it did; WA_NONE for a key the table lacks. */
watch_action watch_press(watch_ui *ui, int key, const snapshot *s, const job *j);
/* The key list of `gpuvet watch --help` and the man page. */
void watch_keys_print(FILE *out);
#endif
