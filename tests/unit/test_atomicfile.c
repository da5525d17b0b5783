/* Unit tests of core/atomicfile.h: a file written whole through a new temporary file beside it,
 * never through a link, never waiting on a FIFO; on failure no temporary file is left and the
 * old file stays as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/atomicfile.h"
#include "core/util.h"
#include "../tools/test_tmp.h"

static char root[4096];

static char *at(const char *rel)
{
	return xasprintf("%s/%s", root, rel);
}

static void put(const char *rel, const char *text)
{
	char *p = at(rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	free(p);
}

static char *get(const char *rel)
{
	char *p = at(rel);
	FILE *f = fopen(p, "r");
	free(p);
	if (!f)
		return NULL;
	strbuf sb;
	sb_init(&sb);
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		sb_addn(&sb, buf, n);
	fclose(f);
	return sb_steal(&sb);
}

/* The names in root, sorted, joined by blanks ("" for none). */
static char *listing(void)
{
	struct dirent **v;
	int n = scandir(root, &v, NULL, alphasort);
	assert_true(n >= 0);
	strbuf sb;
	sb_init(&sb);
	for (int i = 0; i < n; i++) {
		if (strcmp(v[i]->d_name, ".") && strcmp(v[i]->d_name, ".."))
			sb_addf(&sb, "%s%s", sb.len ? " " : "", v[i]->d_name);
		free(v[i]);
	}
	free(v);
	return sb_steal(&sb);
}

static void assert_listing(const char *want)
{
	char *l = listing();
	if (strcmp(l, want) != 0)
		fail_msg("files: '%s', want '%s'", l, want);
	free(l);
}

static int setup(void **state)
{
	(void)state;
	char tmpl[4096];
	test_tmp_path(tmpl, sizeof(tmpl), "gpuvet-atomicfile-XXXXXX");
	assert_non_null(mkdtemp(tmpl));
	str_copy(root, sizeof(root), tmpl);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char *cmd = xasprintf("rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	return 0;
}

static void test_new_and_replaced(void **state)
{
	(void)state;
	char err[512];
	mode_t old = umask(022);
	char *p = at("page.html");
	assert_true(atomic_file_write(p, "<html>one</html>\n", 17, 0666, err, sizeof(err)));
	char *text = get("page.html");
	assert_string_equal(text, "<html>one</html>\n");
	free(text);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644); /* 0666 under the umask */
	/* a file being replaced keeps its own mode */
	assert_int_equal(chmod(p, 0600), 0);
	atomic_file *a = atomic_file_open(p, 0666, err, sizeof(err));
	assert_non_null(a);
	fputs("<html>two</html>\n", atomic_file_stream(a));
	assert_true(atomic_file_commit(a, err, sizeof(err)));
	text = get("page.html");
	assert_string_equal(text, "<html>two</html>\n");
	free(text);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_listing("page.html");
	/* a bare name is written in the current directory */
	char cwd[4096];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(root), 0);
	assert_true(atomic_file_write("bare.txt", "x", 1, 0666, err, sizeof(err)));
	assert_int_equal(chdir(cwd), 0);
	assert_listing("bare.txt page.html");
	umask(old);
	free(p);
}

/* A link or FIFO planted where the old code wrote (FILE.tmp) is never touched; a FIFO at the name
 * itself is replaced, never waited on; a link at the name is refused and left, with its target. */
static void test_planted(void **state)
{
	(void)state;
	char err[512];
	put("victim", "precious\n");
	char *victim = at("victim"), *link_tmp = at("out.html.tmp"), *fifo_tmp = at("j.xml.tmp");
	assert_int_equal(symlink(victim, link_tmp), 0);
	assert_int_equal(mkfifo(fifo_tmp, 0600), 0);
	char *out = at("out.html"), *j = at("j.xml");
	alarm(20); /* a FIFO opened for writing would block here for ever */
	assert_true(atomic_file_write(out, "page\n", 5, 0666, err, sizeof(err)));
	assert_true(atomic_file_write(j, "<testsuites/>\n", 14, 0666, err, sizeof(err)));
	char *text = get("victim");
	assert_string_equal(text, "precious\n");
	free(text);
	struct stat st;
	assert_int_equal(lstat(link_tmp, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(lstat(fifo_tmp, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));

	/* a FIFO at the name: replaced by the file, without waiting for a reader */
	char *fifo = at("fifo.prom");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_true(atomic_file_write(fifo, "m 1\n", 4, 0644, err, sizeof(err)));
	assert_int_equal(lstat(fifo, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	text = get("fifo.prom");
	assert_string_equal(text, "m 1\n");
	free(text);

	/* a link at the name: refused, and neither the link nor its target changes */
	char *link = at("report.html");
	assert_int_equal(symlink(victim, link), 0);
	assert_false(atomic_file_write(link, "page\n", 5, 0666, err, sizeof(err)));
	assert_non_null(strstr(err, link));
	assert_non_null(strstr(err, "symbolic link"));
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	text = get("victim");
	assert_string_equal(text, "precious\n");
	free(text);
	alarm(0);
	assert_listing("fifo.prom j.xml j.xml.tmp out.html out.html.tmp report.html victim");
	free(victim);
	free(link_tmp);
	free(fifo_tmp);
	free(out);
	free(j);
	free(fifo);
	free(link);
}

/* A character device cannot be replaced: it is written in place and stays the device. */
static void test_device(void **state)
{
	(void)state;
	char err[512];
	assert_true(atomic_file_write("/dev/null", "nothing\n", 8, 0666, err, sizeof(err)));
	struct stat st;
	assert_int_equal(lstat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
}

/* A write that fails (a file-size limit: EFBIG, not SIGXFSZ) leaves the old file and no
 * temporary file; so do a directory at the name, a missing directory and an abort. */
static void test_failures(void **state)
{
	(void)state;
	char err[512];
	put("report.html", "the old page\n");
	char *p = at("report.html");
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = {4096, 4096};
		setrlimit(RLIMIT_FSIZE, &rl);
		size_t len = 1 << 20;
		char *big = xmalloc(len);
		memset(big, 'x', len);
		bool ok = atomic_file_write(p, big, len, 0666, err, sizeof(err));
		/* exit 0: failed as it should, with the reason */
		_exit(!ok && strstr(err, p) && strstr(err, strerror(EFBIG)) ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("under a file-size limit: status 0x%x (killed, or no EFBIG error)", status);
	char *text = get("report.html");
	assert_string_equal(text, "the old page\n");
	free(text);
	assert_listing("report.html");

	atomic_file *a = atomic_file_open(p, 0666, err, sizeof(err));
	assert_non_null(a);
	fputs("half a page", atomic_file_stream(a));
	atomic_file_abort(a);
	text = get("report.html");
	assert_string_equal(text, "the old page\n");
	free(text);
	assert_listing("report.html");

	char *d = at("a-directory");
	assert_int_equal(mkdir(d, 0700), 0);
	assert_false(atomic_file_write(d, "x", 1, 0666, err, sizeof(err)));
	assert_non_null(strstr(err, d));
	assert_listing("a-directory report.html");

	char *missing = at("no/such/dir/file");
	assert_false(atomic_file_write(missing, "x", 1, 0666, err, sizeof(err)));
	assert_non_null(strstr(err, "cannot create a temporary file in"));
	assert_listing("a-directory report.html");
	free(p);
	free(d);
	free(missing);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_new_and_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_planted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failures, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
