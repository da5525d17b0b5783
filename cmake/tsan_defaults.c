/* Linked into GPUVET_TSAN builds only: ThreadSanitizer's defaults for every gpuvet program and
 * test, whatever environment a test gives them (the scenario runner clears it). The first race
 * report aborts, so a test that meets one fails rather than passing with a report on stderr. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "halt_on_error=1:abort_on_error=1:second_deadlock_stack=1";
}

/* Libraries loaded at run time that are not built with TSan and synchronise their own thread
 * pools with spin loops TSan cannot see: OpenBLAS's workers memset the output matrix and the
 * caller reads and frees it after the pool's (invisible) barrier. A race is ignored only when one
 * of its two stacks runs inside such a library; every race between gpuvet's own threads is still
 * reported. (Not called_from_lib: TSan dies on a library with two executable segments once the
 * next dlopen rescans the modules.) */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void)
{
	return "race:libopenblas.so\n";
}
