# Front door: `make run` and `make test`. The build itself is CMake (build/).
PREFIX ?= /usr/local
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all build run test test-asan test-tsan fuzz install clean deps test-deps

all: build

deps:
	@sh scripts/install-deps.sh

test-deps:
	@sh scripts/install-deps.sh --test

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=$(PREFIX)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

# Installs what is missing, builds, and runs the diagnosis on this machine.
run: build
	./$(BUILD)/gpuvet check || true

# Builds and runs the whole test suite (GPU tests skip without a GPU).
test: test-deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# The same suite under AddressSanitizer and UBSan.
test-asan: test-deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DGPUVET_SANITIZE=ON -DCMAKE_C_COMPILER=clang
	cmake --build build-asan -j$(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j$(JOBS) -LE fuzz

# The unit tests and the scenarios that run the probe, per-GPU, deadline, Python-child, bench and
# run threads, under ThreadSanitizer (clang): the first race report aborts its test.
TSAN_TESTS = ^unit/test_|^scenario/(100|128|136|200|300|405|407|409|411|600|602|604|722)-
test-tsan: test-deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DGPUVET_TSAN=ON -DCMAKE_C_COMPILER=clang
	cmake --build build-tsan -j$(JOBS) --target gpuvet scenario_runner fake_nvml fake_nvml_basic fake_cuda \
		$(patsubst tests/unit/%.c,%,$(wildcard tests/unit/test_*.c))
	cd build-tsan && ctest --output-on-failure -j$(JOBS) -R '$(TSAN_TESTS)'

# libFuzzer targets: FUZZ_SECONDS each (default 60), JOBS of them at a time (docs/fuzzing.md).
FUZZ_SECONDS ?= 60
fuzz: test-deps
	cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DGPUVET_FUZZ=ON -DCMAKE_C_COMPILER=clang -DGPUVET_FUZZ_SECONDS=$(FUZZ_SECONDS)
	cmake --build build-fuzz -j$(JOBS)
	cd build-fuzz && ctest --output-on-failure -L fuzz -j$(JOBS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
