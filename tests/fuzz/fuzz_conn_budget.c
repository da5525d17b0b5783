/* The exporter's connection budget under any sequence of events (connections come, send their
 * request line, are answered, go; time passes), and the --allow parser on any text. Invariants:
 * after a newcomer is admitted the budgets hold, the live count is what the slots say, and a
 * connection past its deadline is always found. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/conn_budget.h"

static size_t count_live(const conn_table *t, const conn_key *k)
{
	size_t n = 0;
	for (size_t i = 0; i < t->cap; i++)
		if (t->v[i].used && !t->v[i].closing && (!k || memcmp(&t->v[i].key, k, sizeof(*k)) == 0))
			n++;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* the first line, if any, is an --allow value */
	const uint8_t *nl = memchr(data, '\n', size);
	if (nl) {
		size_t n = (size_t)(nl - data);
		char *text = malloc(n + 1);
		memcpy(text, data, n);
		text[n] = '\0';
		conn_net net;
		char err[256];
		if (conn_net_parse(text, &net, err, sizeof(err))) {
			if ((net.family != 4 && net.family != 6) || net.bits > (net.family == 4 ? 32 : 128))
				abort();
			struct sockaddr_in in = {0};
			in.sin_family = AF_INET;
			(void)conn_allowed(&net, 1, (struct sockaddr *)&in);
		} else if (!err[0]) {
			abort();
		}
		free(text);
		data = nl + 1;
		size -= n + 1;
	}
	if (size < 2)
		return 0;
	unsigned max_total = 1 + data[0] % 8, per_class = data[1] % 4;
	conn_table t;
	conn_table_init(&t, max_total, per_class, 2.0, max_total + 4);
	double now = 0;
	for (size_t i = 2; i + 1 < size; i += 2) {
		uint8_t op = data[i] % 5, arg = data[i + 1];
		conn_slot *s = &t.v[arg % t.cap];
		switch (op) {
		case 0: { /* a connection from one of 4 addresses */
			struct sockaddr_in in = {0};
			in.sin_family = AF_INET;
			in.sin_addr.s_addr = htonl(0x7f000001u + (arg & 3));
			conn_key k = conn_key_of((struct sockaddr *)&in);
			conn_slot *c = conn_add(&t, (int)i, &k, now);
			if (!c)
				break;
			conn_slot *v;
			while ((v = conn_victim(&t, c, now)) != NULL)
				if (v == c)
					break;
			if (count_live(&t, NULL) > max_total || (per_class && count_live(&t, &k) > per_class))
				abort();
			break;
		}
		case 1:
			if (s->used)
				conn_set_state(&t, s, (conn_state)(arg % 3), now);
			break;
		case 2:
			if (s->used)
				conn_remove(&t, s); /* the library closed it */
			break;
		case 3:
			now += (arg % 16) * 0.25;
			break;
		case 4: {
			double wait = conn_next_deadline(&t, now, 5);
			while (conn_expired(&t, now + wait) != NULL)
				;
			for (size_t j = 0; j < t.cap; j++)
				if (t.v[j].used && !t.v[j].closing && now + wait - t.v[j].since >= t.deadline)
					abort();
			break;
		}
		}
		if (count_live(&t, NULL) != t.live)
			abort();
	}
	conn_table_free(&t);
	return 0;
}
