# Regenerates build/gen/git_commit.cpp at every build, rewriting it only when the commit changes.
set(LLMBENCH_GIT_SOURCE "${CMAKE_BINARY_DIR}/gen/git_commit.cpp")
add_custom_target(llmbench_git_version
  COMMAND ${CMAKE_COMMAND} -DSRC=${CMAKE_SOURCE_DIR} -DOUT=${LLMBENCH_GIT_SOURCE}
          -P ${CMAKE_SOURCE_DIR}/cmake/WriteGitCommit.cmake
  BYPRODUCTS ${LLMBENCH_GIT_SOURCE}
  COMMENT "git commit")
if(NOT EXISTS ${LLMBENCH_GIT_SOURCE})
  execute_process(COMMAND ${CMAKE_COMMAND} -DSRC=${CMAKE_SOURCE_DIR} -DOUT=${LLMBENCH_GIT_SOURCE}
                  -P ${CMAKE_SOURCE_DIR}/cmake/WriteGitCommit.cmake)
endif()
