/* Without libFuzzer, a fuzz target is built with this main: it replays every file given (the
 * saved corpus), so the corpus runs as a regression test in every build, under ASan in CI. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		if (!f) {
			perror(argv[i]);
			return 1;
		}
		unsigned char *buf = malloc(1 << 20);
		size_t n = fread(buf, 1, 1 << 20, f);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, n);
		free(buf);
	}
	printf("replayed %d inputs\n", argc - 1);
	return 0;
}
