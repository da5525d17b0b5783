/* Unit tests of the exporter's connection budget (serve/conn_budget.c): who is closed to make
 * room, and when the whole-request deadline closes a connection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include "serve/conn_budget.h"

static conn_key v4(const char *a)
{
	struct sockaddr_in in = {0};
	in.sin_family = AF_INET;
	inet_pton(AF_INET, a, &in.sin_addr);
	return conn_key_of((struct sockaddr *)&in);
}

static conn_key v6(const char *a)
{
	struct sockaddr_in6 in6 = {0};
	in6.sin6_family = AF_INET6;
	inet_pton(AF_INET6, a, &in6.sin6_addr);
	return conn_key_of((struct sockaddr *)&in6);
}

/* Adds a connection and closes what the budget names; returns the new slot, or NULL when the
 * newcomer itself was closed. */
static conn_slot *arrive(conn_table *t, int fd, conn_key k, double now, int *victim_fd)
{
	conn_slot *s = conn_add(t, fd, &k, now);
	assert_non_null(s);
	*victim_fd = -1;
	conn_slot *v;
	while ((v = conn_victim(t, s, now)) != NULL) {
		*victim_fd = v->fd;
		if (v == s)
			return NULL;
	}
	return s;
}

static void test_names(void **state)
{
	(void)state;
	/* label values: distinct, snake_case */
	for (int i = 0; i < CONN_REASONS; i++) {
		const char *n = conn_reason_name((conn_reason)i);
		assert_true(n[0] >= 'a' && n[0] <= 'z');
		assert_int_equal(strspn(n, "abcdefghijklmnopqrstuvwxyz_"), strlen(n));
		for (int j = 0; j < i; j++)
			assert_string_not_equal(n, conn_reason_name((conn_reason)j));
	}
	assert_string_equal(conn_state_name(CONN_ANSWERING), "answering");
}

static void test_keys(void **state)
{
	(void)state;
	conn_key a = v4("127.0.0.1"), b = v6("::ffff:127.0.0.1");
	assert_int_equal(a.family, 4);
	assert_memory_equal(&a, &b, sizeof(a)); /* IPv4-mapped is the IPv4 address */
	conn_key c = v6("2001:db8:1:2::1"), d = v6("2001:db8:1:2:ffff::9"), e = v6("2001:db8:1:3::1");
	assert_int_equal(c.family, 6);
	assert_memory_equal(&c, &d, sizeof(c)); /* one /64 */
	assert_memory_not_equal(&c, &e, sizeof(c));
	assert_memory_not_equal(&a, &c, sizeof(a));
}

static void test_idle_closed_first(void **state)
{
	(void)state;
	conn_table t;
	conn_table_init(&t, 4, 0, 10, 8);
	int vfd;
	conn_slot *s[4];
	for (int i = 0; i < 4; i++) {
		s[i] = arrive(&t, 10 + i, v4("10.0.0.1"), 1.0 + i, &vfd);
		assert_int_equal(vfd, -1);
	}
	/* the oldest is answering, the second sends headers, the third and fourth are idle */
	conn_set_state(&t, s[0], CONN_HEADERS, 1.5);
	conn_set_state(&t, s[0], CONN_ANSWERING, 1.6);
	conn_set_state(&t, s[1], CONN_HEADERS, 2.5);
	/* over the budget: the oldest idle goes (the third), not the older ones in other states */
	assert_non_null(arrive(&t, 20, v4("10.0.0.2"), 5.0, &vfd));
	assert_int_equal(vfd, 12);
	assert_non_null(arrive(&t, 21, v4("10.0.0.2"), 5.1, &vfd));
	assert_int_equal(vfd, 13);
	/* the idle ones left are the newcomers themselves: the oldest of them goes before headers */
	assert_non_null(arrive(&t, 22, v4("10.0.0.2"), 5.2, &vfd));
	assert_int_equal(vfd, 20);
	assert_int_equal(t.closed[CONN_EVICTED], 3);
	assert_int_equal(t.live, 4);
	conn_table_free(&t);
}

static void test_headers_then_stalled_answers(void **state)
{
	(void)state;
	conn_table t;
	conn_table_init(&t, 2, 0, 10, 6);
	int vfd;
	conn_slot *a = arrive(&t, 1, v4("10.0.0.1"), 0, &vfd);
	conn_slot *b = arrive(&t, 2, v4("10.0.0.1"), 0.1, &vfd);
	conn_set_state(&t, a, CONN_ANSWERING, 0.2);
	conn_set_state(&t, b, CONN_HEADERS, 0.3);
	/* headers before answers */
	conn_slot *c = arrive(&t, 3, v4("10.0.0.1"), 0.4, &vfd);
	assert_non_null(c);
	assert_int_equal(vfd, 2);
	conn_set_state(&t, c, CONN_ANSWERING, 0.5);
	/* two answers under way, both young: the newcomer is refused */
	assert_null(arrive(&t, 4, v4("10.0.0.1"), 0.6, &vfd));
	assert_int_equal(vfd, 4);
	assert_int_equal(t.closed[CONN_REFUSED], 1);
	/* a second later the oldest answer has stalled: it goes */
	assert_non_null(arrive(&t, 5, v4("10.0.0.1"), 1.3, &vfd));
	assert_int_equal(vfd, 1);
	conn_table_free(&t);
}

static void test_class_budget(void **state)
{
	(void)state;
	conn_table t;
	conn_table_init(&t, 100, 3, 10, 104);
	int vfd;
	for (int i = 0; i < 3; i++)
		arrive(&t, i, v4("127.0.0.1"), i, &vfd);
	arrive(&t, 50, v4("127.0.0.2"), 0.5, &vfd); /* another class, older than some of the first */
	/* a fourth from 127.0.0.1 closes the oldest idle of its own class, never another's */
	assert_non_null(arrive(&t, 3, v4("127.0.0.1"), 4, &vfd));
	assert_int_equal(vfd, 0);
	assert_non_null(arrive(&t, 4, v4("127.0.0.1"), 5, &vfd));
	assert_int_equal(vfd, 1);
	assert_int_equal(t.live, 4);
	conn_table_free(&t);
}

static void test_closed_slots_are_reused(void **state)
{
	(void)state;
	conn_table t;
	conn_table_init(&t, 1, 0, 10, 2);
	int vfd;
	conn_slot *a = arrive(&t, 1, v4("10.0.0.1"), 0, &vfd);
	conn_slot *b = arrive(&t, 2, v4("10.0.0.1"), 1, &vfd);
	assert_int_equal(vfd, 1);
	conn_key k = v4("10.0.0.1");
	assert_null(conn_add(&t, 3, &k, 2)); /* every slot held, one by a connection being closed */
	conn_remove(&t, a);                  /* the library closed it */
	assert_non_null(conn_add(&t, 3, &k, 2));
	(void)b;
	conn_table_free(&t);
}

static void test_whole_request_deadline(void **state)
{
	(void)state;
	conn_table t;
	conn_table_init(&t, 10, 0, 2, 12);
	int vfd;
	conn_slot *slow = arrive(&t, 1, v4("10.0.0.1"), 0, &vfd);
	conn_slot *keep = arrive(&t, 2, v4("10.0.0.1"), 0, &vfd);
	/* the request line came, headers trickle: the deadline still runs from the connection */
	conn_set_state(&t, slow, CONN_HEADERS, 1.5);
	/* the other was answered and waits for its next request */
	conn_set_state(&t, keep, CONN_ANSWERING, 0.1);
	conn_set_state(&t, keep, CONN_IDLE, 1.0);
	assert_true(conn_next_deadline(&t, 1.5, 5) > 0.49 && conn_next_deadline(&t, 1.5, 5) < 0.51);
	assert_null(conn_expired(&t, 1.9));
	conn_slot *e = conn_expired(&t, 2.0);
	assert_ptr_equal(e, slow);
	assert_null(conn_expired(&t, 2.0));
	assert_ptr_equal(conn_expired(&t, 3.0), keep);
	assert_int_equal(t.closed[CONN_DEADLINE], 2);
	assert_int_equal(t.live, 0);
	assert_true(conn_next_deadline(&t, 3.0, 5) == 5);
	/* a client that hung up: closing, counted once, never past a deadline afterwards */
	conn_slot *gone = arrive(&t, 3, v4("10.0.0.1"), 3.0, &vfd);
	conn_hung_up(&t, gone);
	conn_hung_up(&t, gone);
	assert_int_equal(t.closed[CONN_HUNG_UP], 1);
	assert_int_equal(t.live, 0);
	assert_null(conn_expired(&t, 10.0));
	conn_table_free(&t);
}

static bool allowed(const conn_net *nets, size_t n, const char *addr)
{
	struct sockaddr_storage ss = {0};
	if (strchr(addr, ':')) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
		in6->sin6_family = AF_INET6;
		assert_int_equal(inet_pton(AF_INET6, addr, &in6->sin6_addr), 1);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;
		in->sin_family = AF_INET;
		assert_int_equal(inet_pton(AF_INET, addr, &in->sin_addr), 1);
	}
	return conn_allowed(nets, n, (struct sockaddr *)&ss);
}

static void test_allow_list(void **state)
{
	(void)state;
	conn_net nets[3];
	char err[256];
	assert_true(conn_net_parse("10.1.0.0/16", &nets[0], err, sizeof(err)));
	assert_true(conn_net_parse("192.168.7.9", &nets[1], err, sizeof(err)));
	assert_true(conn_net_parse("2001:db8::/33", &nets[2], err, sizeof(err)));
	assert_true(allowed(nets, 3, "10.1.255.3"));
	assert_false(allowed(nets, 3, "10.2.0.1"));
	assert_true(allowed(nets, 3, "192.168.7.9"));
	assert_false(allowed(nets, 3, "192.168.7.8"));
	assert_true(allowed(nets, 3, "::ffff:10.1.2.3")); /* a dual-stack listener's IPv4 client */
	assert_true(allowed(nets, 3, "2001:db8:7fff::1"));
	assert_false(allowed(nets, 3, "2001:db8:8000::1"));
	assert_false(allowed(nets, 0, "10.1.0.1"));
	conn_net any;
	assert_true(conn_net_parse("0.0.0.0/0", &any, err, sizeof(err)));
	assert_true(allowed(&any, 1, "8.8.8.8"));
	assert_false(allowed(&any, 1, "::1"));
	static const char *const bad[] = {"", "/8", "10.0.0.0/", "10.0.0.0/33", "::/129", "10.0.0.0/8x", "example.org",
					  "10.0.0.0/-1", "1.2.3.4.5"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_false(conn_net_parse(bad[i], &any, err, sizeof(err)));
		assert_true(err[0] != '\0');
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_idle_closed_first),
		cmocka_unit_test(test_headers_then_stalled_answers),
		cmocka_unit_test(test_class_budget),
		cmocka_unit_test(test_closed_slots_are_reused),
		cmocka_unit_test(test_whole_request_deadline),
		cmocka_unit_test(test_allow_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
