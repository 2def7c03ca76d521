# Every braid build option lives here (oneDNN style).
option(BRAID_BUILD_TESTS "Build the GoogleTest suites" ON)
option(BRAID_BUILD_BENCH "Build the Google Benchmark programs (compiled in CI, run by hand)" ON)
option(BRAID_WERROR "Treat compiler warnings as errors (CI)" OFF)
option(BRAID_BUILD_FUZZERS "Build libFuzzer targets (needs clang)" OFF)
set(BRAID_SANITIZE "" CACHE STRING "Sanitizer: address|thread|undefined or empty")
