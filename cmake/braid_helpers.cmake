# Declarative helpers in the spirit of IREE's iree_cc_*.
#   braid_add_library(NAME ir SRCS a.cc b.cc DEPS braid::base PUBLIC_DEPS ...)
#   braid_add_test(NAME ir_test SRCS a_test.cc DEPS braid::ir LABELS unit)
function(braid_add_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS;PUBLIC_DEPS" ${ARGN})
  add_library(braid_${ARG_NAME} STATIC ${ARG_SRCS})
  add_library(braid::${ARG_NAME} ALIAS braid_${ARG_NAME})
  target_include_directories(braid_${ARG_NAME} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(braid_${ARG_NAME} PUBLIC ${ARG_PUBLIC_DEPS} ${ARG_DEPS} PRIVATE braid::warnings)
endfunction()

function(braid_add_test)
  cmake_parse_arguments(ARG "" "NAME;TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} braid_testing GTest::gtest_main braid::warnings)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  gtest_discover_tests(${ARG_NAME}
    PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "BRAID_SOURCE_DIR=${PROJECT_SOURCE_DIR};BRAID_BINARY_DIR=${PROJECT_BINARY_DIR};BRAID_SHARED_DIR=${BRAID_SHARED_DIR}"
    DISCOVERY_TIMEOUT 60)
endfunction()
