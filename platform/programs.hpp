#pragma once
// Finding a program as a shell would, for `run`'s argv[0], its interpreter and `doctor`'s checks.
// POSIX: a name with a '/' is a path; else the first executable file of that name in $PATH's
// directories. Windows: a name with a '\', '/' or a drive is a path; else $PATH's directories, each
// trying the name as given and then with each extension of $PATHEXT (python → python.exe); a path
// without an extension gets the same tries.
#include <optional>
#include <string>

namespace ddp::platform {

// Whether `program` names a file by its path (not to be searched for).
bool names_a_path(const std::string& program);

// The file that runs: `program` itself when it names a path (with an extension added on Windows),
// else the first match in $PATH; nullopt when there is none or it is not executable.
std::optional<std::string> find_program(const std::string& program);

}  // namespace ddp::platform
