/* Unit tests of the /proc/net/tcp row reader (parse/nettcp.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "parse/nettcp.h"

static void test_rows(void **s)
{
	(void)s;
	/* the header, a listener, a connection, a truncated last line without its newline */
	const char *table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
			    "   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1 0\n"
			    "   1: 0100007F:D2F0 0500000A:7374 01 00000000:00000000 00:00000000 00000000  1000        0 222 1 0\n"
			    "   2: 0100007F:D2F1 0500000A";
	const char *cur = table;
	net_row r;
	bool ok = true;
	assert_true(net_row_next(&cur, &r, &ok));
	assert_false(ok); /* the header */
	assert_true(net_row_next(&cur, &r, &ok));
	assert_true(ok);
	assert_int_equal(r.state, 10);
	assert_int_equal(r.local_port, 8080);
	assert_int_equal(r.remote_port, 0);
	assert_int_equal(r.inode, 111);
	assert_string_equal(r.local, "00000000");
	assert_true(net_row_next(&cur, &r, &ok));
	assert_true(ok);
	assert_int_equal(r.state, 1);
	assert_int_equal(r.local_port, 54000);
	assert_int_equal(r.remote_port, 29556);
	assert_int_equal(r.inode, 222);
	assert_string_equal(r.remote, "0500000A");
	assert_true(net_row_next(&cur, &r, &ok));
	assert_false(ok); /* truncated: no state, no inode */
	assert_false(net_row_next(&cur, &r, &ok));
	assert_false(net_row_next(&cur, &r, &ok)); /* and stays at the end */

	/* a row's fields never run into the next line: an inode is this line's own */
	cur = "   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0\n"
	      "   1: 0100007F:D2F0 0500000A:7374 01 00000000:00000000 00:00000000 00000000  1000        0 222 1 0\n";
	assert_true(net_row_next(&cur, &r, &ok));
	assert_false(ok);
	assert_true(net_row_next(&cur, &r, &ok));
	assert_true(ok);
	assert_int_equal(r.inode, 222);

	/* a port beyond 16 bits, an address without a port */
	cur = "   0: 00000000:1F9000 00000000:0000 0A 0:0 0:0 0 0 0 5\n   1: 00000000 00000000:0000 0A 0:0 0:0 0 0 0 6\n";
	assert_true(net_row_next(&cur, &r, &ok));
	assert_false(ok);
	assert_true(net_row_next(&cur, &r, &ok));
	assert_false(ok);
	cur = NULL;
	assert_false(net_row_next(&cur, &r, &ok));
}

static void test_addresses(void **s)
{
	(void)s;
	char a[64];
	net_addr_text("0100007F", false, a, sizeof(a));
	assert_string_equal(a, "127.0.0.1");
	net_addr_text("0500000A", false, a, sizeof(a));
	assert_string_equal(a, "10.0.0.5");
	/* IPv4 mapped into IPv6 reads as IPv4 */
	net_addr_text("0000000000000000FFFF00000500000A", true, a, sizeof(a));
	assert_string_equal(a, "10.0.0.5");
	/* fd00::5: each 32-bit word in host (little-endian) order */
	net_addr_text("000000FD000000000000000005000000", true, a, sizeof(a));
	assert_string_equal(a, "[fd00:0:0:0:0:0:0:5]");
	net_addr_text("00000000000000000000000001000000", true, a, sizeof(a));
	assert_string_equal(a, "[0:0:0:0:0:0:0:1]");
	/* the wrong length for its family, or not hex */
	net_addr_text("0100007F", true, a, sizeof(a));
	assert_string_equal(a, "?");
	net_addr_text("0100007G", false, a, sizeof(a));
	assert_string_equal(a, "?");
	net_addr_text("", false, a, sizeof(a));
	assert_string_equal(a, "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_rows), cmocka_unit_test(test_addresses)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
