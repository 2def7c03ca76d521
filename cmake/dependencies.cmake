# Third-party packages come from Debian 12, oneDNN from PyPI into .venv (make deps installs both).
# Nothing is vendored.
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(OpenSSL REQUIRED)  # SHA-256 of run outputs
find_package(OpenMP REQUIRED)   # GNU libgomp: the runtime of PyPI's onednn-cpu-gomp
# oneDNN 3.x from PyPI (onednn-devel-cpu-gomp, scripts/requirements.txt), which `make deps` puts
# in the checkout's .venv: lib/cmake/dnnl defines DNNL::dnnl (OpenMP runtime). Every configure
# (the Makefile, pyproject.toml's wheel build, scripts and tools that run cmake themselves) looks
# there first; a 2.x found elsewhere (Debian's libdnnl-dev) is refused by the version.
find_package(dnnl 3 HINTS "${PROJECT_SOURCE_DIR}/.venv")
if(NOT dnnl_FOUND)
  message(FATAL_ERROR "oneDNN 3 not found: `make deps` installs it (onednn-devel-cpu-gomp) into "
                      "${PROJECT_SOURCE_DIR}/.venv; or pass -Ddnnl_DIR=<prefix>/lib/cmake/dnnl")
endif()
# Binaries of the build tree find libdnnl.so.3 without LD_LIBRARY_PATH: CMake's build RPATH
# holds the directory of every linked library outside the system's. Installed targets (the
# Python module of `pip install .`) add BRAID_DNNL_LIBRARY_DIR themselves: CMake leaves
# directories inside the project, as .venv is, out of CMAKE_INSTALL_RPATH_USE_LINK_PATH.
get_target_property(_dnnl_configs DNNL::dnnl IMPORTED_CONFIGURATIONS)
list(GET _dnnl_configs 0 _dnnl_config)
get_target_property(_dnnl_library DNNL::dnnl IMPORTED_LOCATION_${_dnnl_config})
get_filename_component(BRAID_DNNL_LIBRARY_DIR "${_dnnl_library}" DIRECTORY)
message(STATUS "braid: oneDNN ${dnnl_VERSION} (${BRAID_DNNL_LIBRARY_DIR})")
find_package(Protobuf REQUIRED)  # must precede ONNX (its config links protobuf::libprotobuf)
find_package(ONNX REQUIRED)      # targets onnx, onnx_proto; they carry ONNX_NAMESPACE/ONNX_ML
include(cuda)                    # optional: the CUDA executor
find_package(MPI COMPONENTS CXX)  # Open MPI: the multi-device executor (optional)
if(BRAID_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(BRAID_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
# shared/ (papers, RandWire graphs) sits beside the checkout.
get_filename_component(BRAID_SHARED_DIR "${PROJECT_SOURCE_DIR}/../shared" ABSOLUTE)
