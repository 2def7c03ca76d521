# braid::warnings carries the warning flags; -Werror only when BRAID_WERROR (CI).
add_library(braid_warnings INTERFACE)
add_library(braid::warnings ALIAS braid_warnings)
# -Wno-restrict: GCC 12 reports false positives inside std::string concatenation (GCC PR 105329).
target_compile_options(braid_warnings INTERFACE
  -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wno-restrict)
if(BRAID_WERROR)
  target_compile_options(braid_warnings INTERFACE -Werror)
endif()
if(BRAID_SANITIZE)
  add_compile_options(-fsanitize=${BRAID_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${BRAID_SANITIZE})
endif()
