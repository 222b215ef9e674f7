# Thin wrapper over CMake: `make` builds into build/, `make test` runs ctest.
BUILD ?= build
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)

.PHONY: all test clean fuzz
all: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

test: all
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# ASan+UBSan libFuzzer build (clang) in build-fuzz/
fuzz:
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DCLLAMA_FUZZ=ON -DCLLAMA_SANITIZE=ON -DCLLAMA_CUDA=OFF -DCLLAMA_SERVER=OFF
	cmake --build build-fuzz -j $(JOBS) --target fuzz_all

clean:
	rm -rf $(BUILD) build-fuzz
