# Front door: `make run` and `make test`. The build itself is CMake (build/).
PREFIX ?= /usr/local
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

STAMP = $(BUILD)/gpuvet-configured
CONFIGURE = cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=$(PREFIX)
# A build tree whose last configure did not finish (no stamp: CMakeLists.txt writes it last) is
# not trusted: its cache goes and the configure starts over.
FORGET_UNFINISHED = if [ ! -f $(STAMP) ] && [ -e $(BUILD)/CMakeCache.txt ]; then \
	echo "gpuvet: $(BUILD)/ is from an unfinished configure: configuring again" >&2; \
	rm -rf $(BUILD)/CMakeCache.txt $(BUILD)/CMakeFiles; fi

.PHONY: all build configure generate run test test-fresh test-asan test-tsan fuzz install clean deps test-deps

all: build

deps:
	@sh scripts/install-deps.sh

test-deps:
	@sh scripts/install-deps.sh --test

configure:
	@$(FORGET_UNFINISHED)
	@[ -f $(STAMP) ] || $(CONFIGURE)

build: deps
	@$(MAKE) --no-print-directory configure
	cmake --build $(BUILD) -j$(JOBS)

# Rewrites the man page's generated sections and the completions from the option tables.
generate: build
	cmake --build $(BUILD) --target generate

# Installs what is missing, builds, and runs the diagnosis on this machine.
run: build
	./$(BUILD)/gpuvet check || true

# Builds and runs the whole test suite (GPU tests skip without a GPU). The tests are required
# here (GPUVET_TESTS=ON), so a build tree configured without them by `make run` gains them.
# The fresh-machine test (label fresh, tens of minutes) is `make test-fresh`.
test: test-deps
	@$(FORGET_UNFINISHED)
	$(CONFIGURE) -DGPUVET_TESTS=ON
	cmake --build $(BUILD) -j$(JOBS)
	cd $(BUILD) && ctest --output-on-failure --no-tests=error -j$(JOBS) -LE fresh

# The README's first and second commands on a bare Debian 12 root (debootstrap; as root).
test-fresh: test-deps
	@$(FORGET_UNFINISHED)
	$(CONFIGURE) -DGPUVET_TESTS=ON
	cmake --build $(BUILD) -j$(JOBS) --target gpuvet gpuvet-serve
	cd $(BUILD) && ctest --output-on-failure --no-tests=error -L fresh

# The same suite under AddressSanitizer and UBSan.
test-asan: test-deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DGPUVET_SANITIZE=ON -DCMAKE_C_COMPILER=clang -DGPUVET_TESTS=ON
	cmake --build build-asan -j$(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp ctest --output-on-failure -j$(JOBS) -LE 'fuzz|fresh'

# The unit tests and the scenarios that run the probe, per-GPU, deadline, Python-child, bench and
# run threads, under ThreadSanitizer (clang): the first race report aborts its test.
# test_gemm_plan opens the fake libcuda again in a supervised child after its first test has
# started threads: ThreadSanitizer aborts a child that starts threads after such a fork (its
# documented limit), so it runs in the other suites only. 617's fake GPUs have their buffers
# filled on the host (the fake models gv_set_f32x4): under ThreadSanitizer that outlasts bench's
# limits; it runs in the others (602 and 619 give their fake GPU 2 GiB, so bench's arrays are 256 MiB).
TSAN_EXCLUDE = ^unit/test_gemm_plan$$|^scenario/617-
TSAN_TESTS = ^unit/test_|^scenario/(100|128|136|200|271|300|405|407|409|411|600|602|604|617|618|620|722)-
test-tsan: test-deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DGPUVET_TSAN=ON -DCMAKE_C_COMPILER=clang -DGPUVET_TESTS=ON
	cmake --build build-tsan -j$(JOBS) --target gpuvet gpuvet-serve scenario_runner fake_nvml fake_nvml_basic fake_cuda fake_cublaslt \
		$(patsubst tests/unit/%.c,%,$(wildcard tests/unit/test_*.c))
	cd build-tsan && ctest --output-on-failure -j$(JOBS) -R '$(TSAN_TESTS)' -E '$(TSAN_EXCLUDE)'

# libFuzzer targets: FUZZ_SECONDS each (default 60), JOBS of them at a time (docs/fuzzing.md).
FUZZ_SECONDS ?= 60
fuzz: test-deps
	cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DGPUVET_FUZZ=ON -DCMAKE_C_COMPILER=clang -DGPUVET_FUZZ_SECONDS=$(FUZZ_SECONDS) -DGPUVET_TESTS=ON
	cmake --build build-fuzz -j$(JOBS)
	cd build-fuzz && ctest --output-on-failure -L fuzz -j$(JOBS)

# The stripped binary, the man page, the completions, the schemas, the systemd unit (under
# PREFIX/lib/systemd/system), the Slurm check (PREFIX/sbin) and share/gpuvet's alert rules,
# dashboard and manifests. DESTDIR stages it (packaging). The Debian package: dpkg-buildpackage
# -us -uc -b (README.md, "Packages").
install: build
	cmake --install $(BUILD) --prefix $(PREFIX) --strip

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
