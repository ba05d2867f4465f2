# Warnings and sanitizers for every target of the project (not for consumers of the install).
add_library(unmask_compile_options INTERFACE)
target_compile_options(unmask_compile_options INTERFACE
  $<$<COMPILE_LANGUAGE:C,CXX>:-Wall -Wextra -Wshadow -Wconversion -Wno-sign-conversion>
  $<$<AND:$<BOOL:${UNMASK_WERROR}>,$<COMPILE_LANGUAGE:C,CXX>>:-Werror>)

if(UNMASK_SANITIZE)
  set(_unmask_sanitize_flags -fsanitize=${UNMASK_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_unmask_sanitize_flags}>")
  add_link_options(${_unmask_sanitize_flags})
endif()
