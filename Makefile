# braid — the README's first two commands: `make demo` and `make test`.
BUILD ?= build
JOBS ?= 2
CMAKE_FLAGS ?=
ifdef CI
  CMAKE_FLAGS += -DBRAID_WERROR=ON
endif

.PHONY: all deps bench-deps build test demo soak models bench fuzz tsan ubsan format clean

all: build

deps:
	@bash scripts/deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DPython_EXECUTABLE=$(CURDIR)/.venv/bin/python $(CMAKE_FLAGS)

# matplotlib for `braid bench --png` (demo and bench only; `make test` does not need it).
bench-deps: deps
	@cmp -s scripts/requirements-bench.txt .venv/.requirements-bench 2>/dev/null || \
	  { .venv/bin/pip install -q --disable-pip-version-check -r scripts/requirements-bench.txt && \
	    cp scripts/requirements-bench.txt .venv/.requirements-bench; }

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

demo: build bench-deps
	@echo "== the zoo =="
	./$(BUILD)/braid models --stats
	@echo "== Inception V3 on this CPU: sequential, then greedy on 2 streams =="
	./$(BUILD)/braid run inception_v3 --algo sequential --threads-per-stream 2
	./$(BUILD)/braid run inception_v3 --algo greedy --streams 2
	@echo "== Inception V3: schedulers side by side (roofline costs; latencies measured on this CPU) =="
	./$(BUILD)/braid bench inception_v3 --algos sequential,greedy,ios,lios,heft,opara --cost roofline \
	  --streams 2 --iters 10 --csv $(BUILD)/demo_bench.csv --png $(BUILD)/demo_bench.png
	@echo "== Inception V3 on a simulated V100 (docs/simulator.md): schedules searched and run on sim:v100 =="
	./$(BUILD)/braid bench inception_v3 --algos sequential,greedy,ios,lios,opara --cost sim:v100 --streams 8
	@echo "== ... and the default run: auto measures the best schedulers there and keeps the fastest =="
	./$(BUILD)/braid run inception_v3 --device sim:v100
	@echo "== braid serve: the KServe v2 / Triton protocol on TOP's runtime, driven by braid load =="
	bash scripts/serve_demo.sh $(BUILD) inception_v3,resnet50:stages,squeezenet \
	  inception_v3:4,resnet50:8,squeezenet:16 5 --image-size 112 --scheduler sequential

# 60 s at saturation through braid load on loopback (not in `make test`): the rates 2 cores serve
# at most, 48 connections against queues of 4 per model, so some requests get the overload
# status; no other error, every request answered, the server's RSS growing under 5%.
soak: build
	LOAD_FLAGS="--concurrency 48" bash scripts/serve_demo.sh $(BUILD) \
	  inception_v3,resnet50:stages,squeezenet inception_v3:16,resnet50:32,squeezenet:64 60 --soak \
	  --image-size 112 --scheduler sequential --queue-capacity 4

# Real PyTorch models exported to ONNX (Debian's CPU-only torch; never at test time).
models:
	bash scripts/models.sh

# Benchmarks (measure and print, never assert): plan dispatch cost, combined-block scheduling
# (cold and from the stage dict), then braid vs ONNX Runtime.
BENCH_MODELS ?= inception_v3 resnet50 googlenet squeezenet nasnet randwire bert
bench: build bench-deps
	taskset -c 0,1 ./$(BUILD)/bench/dispatch_bench --benchmark_min_time=0.3
	taskset -c 0 ./$(BUILD)/bench/combined_bench --benchmark_filter=StageDict
	.venv/bin/python bench/peers.py $(BENCH_MODELS) --braid $(BUILD)/braid --rounds 3 --iters 10 \
	  --json $(BUILD)/peers.json --markdown $(BUILD)/peers.md

# libFuzzer on the ONNX importer, .dag.json, schedule JSON, request bodies, the CLI's number
# parsers and the files users write (.npy, device files, scenarios, config.pbtxt, calibration
# series), 60 s each (clang; not in `make test`; BRAID_FUZZ_SANITIZE=address,undefined adds UBSan).
fuzz: deps
	bash scripts/fuzz.sh

# ThreadSanitizer build of the executor tests (not in `make test`: slow). oneDNN and libgomp are
# not instrumented; TSan then checks braid's own lanes, events and memory plan.
tsan: deps
	cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBRAID_SANITIZE=thread
	cmake --build build-tsan -j $(JOBS) --target exec_test
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ignore_noninstrumented_modules=1" \
	  ./build-tsan/src/exec/exec_test --gtest_filter='*CpuExecutor*:MemoryPlan*'

# UndefinedBehaviorSanitizer build of every C++ test, run by CTest, halting on the first report
# (not in `make test`: a second full build, about 40 minutes on 2 cores). The Python tests are
# left out: the interpreter does not load the UBSan runtime.
ubsan: deps
	cmake -S . -B build-ubsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBRAID_SANITIZE=undefined
	cmake --build build-ubsan -j $(JOBS)
	cd build-ubsan && UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1" ctest -j $(JOBS) -E 'python|wheel'

format:
	clang-format -i $$(git ls-files '*.h' '*.cc')

clean:
	rm -rf $(BUILD)
