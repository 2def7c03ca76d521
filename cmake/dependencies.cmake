# All third-party packages come from Debian 12 (make deps installs them). Nothing is vendored.
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(OpenSSL REQUIRED)  # SHA-256 of run outputs
find_package(OpenMP REQUIRED)   # GNU libgomp: the runtime Debian's oneDNN uses
find_package(dnnl REQUIRED)     # needs ocl-icd-opencl-dev + opencl-c-headers
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
