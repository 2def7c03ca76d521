# Every braid build option lives here (oneDNN style).
option(BRAID_BUILD_TESTS "Build the GoogleTest suites" ON)
option(BRAID_BUILD_BENCH "Build the Google Benchmark programs (compiled in CI, run by hand)" ON)
option(BRAID_WERROR "Treat compiler warnings as errors (CI)" OFF)
# `import braid` (python/): AUTO builds it where Python's headers and nanobind (PyPI, in the
# venv `make deps` makes) are found; ON requires them; OFF never builds it.
set(BRAID_BUILD_PYTHON AUTO CACHE STRING "Build the Python module: AUTO, ON or OFF")
set_property(CACHE BRAID_BUILD_PYTHON PROPERTY STRINGS AUTO ON OFF)
option(BRAID_BUILD_FUZZERS "Build libFuzzer targets (needs clang)" OFF)
set(BRAID_SANITIZE "" CACHE STRING "Sanitizer: address|thread|undefined or empty")
# The CUDA executor (issue 6): AUTO builds it when nvcc (on PATH, CUDACXX or /usr/local/cuda)
# and cuDNN are found; ON requires them; OFF never builds it.
set(BRAID_WITH_CUDA AUTO CACHE STRING "Build the CUDA executor: AUTO, ON or OFF")
set_property(CACHE BRAID_WITH_CUDA PROPERTY STRINGS AUTO ON OFF)
