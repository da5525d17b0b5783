/*
 * Writing JSON for --json: one way to say "not known" (null, never a made-up 0 or ""), and a
 * struct's members as keys from one table per struct written (json_add_fields walks it).
 */
#ifndef GPUVET_CORE_JSON_H
#define GPUVET_CORE_JSON_H
#include <stddef.h>

#include <cjson/cJSON.h>

void json_add_num(cJSON *o, const char *key, double v);       /* NAN and infinities: null */
void json_add_str(cJSON *o, const char *key, const char *s);  /* NULL: null; "" stays "" */
void json_add_text(cJSON *o, const char *key, const char *s); /* NULL and "": null */
void json_add_count(cJSON *o, const char *key, int v);        /* below 0: null */

/* A member of a struct as a JSON key: JF_TEXT text in a char array and JF_PTR behind a char
 * pointer (json_add_text), JF_NUM a double (json_add_num), JF_INT an int count (json_add_count),
 * JF_NUMBER an int always written, JF_BOOL a bool. */
typedef enum { JF_TEXT, JF_PTR, JF_NUM, JF_INT, JF_NUMBER, JF_BOOL } json_kind;
typedef struct json_field {
	const char *key;
	json_kind kind;
	size_t off;
} json_field;
#define JF(T, kind, key, member) {key, kind, offsetof(T, member)}

/* The members of *base that the n rows of f name, in their order. */
void json_add_fields(cJSON *o, const void *base, const json_field *f, size_t n);
/* The same as a new object. */
cJSON *json_fields_object(const void *base, const json_field *f, size_t n);
#endif
