# Writes OUT: the section of IN (a Markdown file) that starts at the line beginning with HEADING
# ("## The job file") and ends before the next "## " heading. The dashboard embeds jobs/README.md's
# job-file section, so that its submit page can show every key (the browser has no jobs/README.md).
# Run as: cmake -DIN=… -DOUT=… "-DHEADING=## The job file" -P extract_section.cmake
file(READ "${IN}" text)
string(FIND "\n${text}" "\n${HEADING}" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${IN} has no line starting with '${HEADING}': the dashboard's job file reference is made from it")
endif()
string(SUBSTRING "${text}" ${start} -1 rest)
string(FIND "${rest}" "\n## " end)
if(NOT end EQUAL -1)
  math(EXPR end "${end} + 1")
  string(SUBSTRING "${rest}" 0 ${end} rest)
endif()
file(WRITE "${OUT}.tmp" "${rest}")
# Only a changed section is rewritten: the assets are not re-embedded for nothing.
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
