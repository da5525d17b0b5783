#include "bench/mtpattern.h"

#include <stddef.h>

#include "bench/gen.h"

uint64_t mt_value(unsigned mode, uint64_t i, uint64_t p, uint64_t a, uint64_t b)
{
	switch (mode) {
	case MT_MODE_CONST: return a;
	case MT_MODE_ADDRESS: return (p + 8 * i) ^ a;
	case MT_MODE_RANDOM: {
		uint32_t lo = gen_hash32((uint32_t)i * GEN_MUL + (uint32_t)a);
		uint32_t hi = gen_hash32(lo ^ (uint32_t)(a >> 32) ^ GEN_H2_XOR);
		return ((uint64_t)hi << 32 | lo) ^ b;
	}
	default: return 0;
	}
}

void mt_complement(unsigned mode, uint64_t *a, uint64_t *b)
{
	if (mode == MT_MODE_RANDOM)
		*b = ~*b;
	else
		*a = ~*a;
}

const char *mt_mode_name(unsigned mode)
{
#define MT_MODE_NAME_(ID, num, name, ...)                                                                              \
	case num: return name;
	switch (mode) {
		MT_MODES(MT_MODE_NAME_) default : return NULL;
	}
#undef MT_MODE_NAME_
}
