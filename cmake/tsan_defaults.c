/* Linked into GPUVET_TSAN builds only: ThreadSanitizer's defaults for every gpuvet program and
 * test, whatever environment a test gives them (the scenario runner clears it). The first race
 * report aborts, so a test that meets one fails rather than passing with a report on stderr. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "halt_on_error=1:abort_on_error=1:second_deadlock_stack=1";
}
