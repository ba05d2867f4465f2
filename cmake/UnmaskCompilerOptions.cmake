# Warnings and sanitizers for every target of the project (not for consumers of the install).
add_library(unmask_compile_options INTERFACE)
target_compile_options(unmask_compile_options INTERFACE
  $<$<COMPILE_LANGUAGE:C,CXX>:-Wall -Wextra -Wshadow -Wconversion -Wno-sign-conversion>
  $<$<AND:$<BOOL:${UNMASK_WERROR}>,$<COMPILE_LANGUAGE:C,CXX>>:-Werror>
  # GCC 12 reports std::string and std::vector internals at -O3 as -Wrestrict and
  # -Wfree-nonheap-object violations (GCC bugs 105329, 105651, 106199): false positives, not ours.
  $<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>,$<COMPILE_LANGUAGE:CXX>>:-Wno-restrict -Wno-free-nonheap-object>)

if(UNMASK_SANITIZE)
  set(_unmask_sanitize_flags -fsanitize=${UNMASK_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_unmask_sanitize_flags}>")
  add_link_options(${_unmask_sanitize_flags})
endif()
