# braid::warnings carries the warning flags; -Werror only when BRAID_WERROR (CI).
add_library(braid_warnings INTERFACE)
add_library(braid::warnings ALIAS braid_warnings)
# -Wno-restrict: GCC 12 reports false positives inside std::string concatenation (GCC PR 105329).
# C++ only: nvcc compiles the .cu files with its own flags.
target_compile_options(braid_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
  -Wno-restrict>)
if(BRAID_WERROR)
  target_compile_options(braid_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
if(BRAID_SANITIZE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${BRAID_SANITIZE}>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=${BRAID_SANITIZE})
endif()
