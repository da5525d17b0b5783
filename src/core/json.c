#include "core/json.h"

#include <math.h>
#include <stdbool.h>

void json_add_num(cJSON *o, const char *key, double v)
{
	if (isfinite(v))
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

void json_add_str(cJSON *o, const char *key, const char *s)
{
	if (s)
		cJSON_AddStringToObject(o, key, s);
	else
		cJSON_AddNullToObject(o, key);
}

void json_add_text(cJSON *o, const char *key, const char *s)
{
	json_add_str(o, key, s && *s ? s : NULL);
}

void json_add_count(cJSON *o, const char *key, int v)
{
	if (v >= 0)
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

void json_add_fields(cJSON *o, const void *base, const json_field *f, size_t n)
{
	const char *p = base;
	for (size_t i = 0; i < n; i++) {
		const void *v = p + f[i].off;
		switch (f[i].kind) {
		case JF_TEXT: json_add_text(o, f[i].key, v); break;
		case JF_PTR: json_add_text(o, f[i].key, *(char *const *)v); break;
		case JF_NUM: json_add_num(o, f[i].key, *(const double *)v); break;
		case JF_INT: json_add_count(o, f[i].key, *(const int *)v); break;
		case JF_NUMBER: cJSON_AddNumberToObject(o, f[i].key, *(const int *)v); break;
		case JF_BOOL: cJSON_AddBoolToObject(o, f[i].key, *(const bool *)v); break;
		}
	}
}

cJSON *json_fields_object(const void *base, const json_field *f, size_t n)
{
	cJSON *o = cJSON_CreateObject();
	json_add_fields(o, base, f, n);
	return o;
}
