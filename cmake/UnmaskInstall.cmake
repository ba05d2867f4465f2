# `cmake --install`: the header, both libraries, unmaskConfig.cmake (find_package(unmask)),
# unmask.pc (pkg-config) and the bundled model (DATADIR/unmask/models, where `unmask` looks for it).
include(CMakePackageConfigHelpers)

install(TARGETS unmask unmask_static EXPORT unmaskTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  PUBLIC_HEADER DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(UNMASK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/unmask)
install(EXPORT unmaskTargets NAMESPACE unmask:: DESTINATION ${UNMASK_CMAKE_DIR})
configure_package_config_file(cmake/unmaskConfig.cmake.in ${PROJECT_BINARY_DIR}/unmaskConfig.cmake
  INSTALL_DESTINATION ${UNMASK_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/unmaskConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/unmaskConfig.cmake ${PROJECT_BINARY_DIR}/unmaskConfigVersion.cmake
              cmake/FindNCCL.cmake
        DESTINATION ${UNMASK_CMAKE_DIR})

set(UNMASK_PC_LIBS_PRIVATE "-lstdc++ -lm")
if(UNMASK_CUDA)
  string(APPEND UNMASK_PC_LIBS_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lrt -lpthread")
endif()
if(UNMASK_WITH_NCCL)
  string(APPEND UNMASK_PC_LIBS_PRIVATE " ${NCCL_LIBRARY}")
endif()
file(RELATIVE_PATH UNMASK_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
configure_file(cmake/unmask.pc.in ${PROJECT_BINARY_DIR}/unmask.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/unmask.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(DIRECTORY models/${UNMASK_BUNDLED_MODEL_NAME} DESTINATION ${CMAKE_INSTALL_DATADIR}/unmask/models)
