#pragma once
// Finding a program as a shell would, for `run`'s argv[0], its interpreter and `doctor`'s checks.
// POSIX: a name with a '/' is a path; else the first executable file of that name in $PATH's
// directories. Windows: a name with a '\', '/' or a drive is a path; else $PATH's directories, each
// trying the name as given and then with each extension of $PATHEXT (python → python.exe); a path
// without an extension gets the same tries.
#include <optional>
#include <string>
#include <vector>

namespace ddp::platform {

// Whether `program` names a file by its path (not to be searched for).
bool names_a_path(const std::string& program);

// The file that runs: `program` itself when it names a path (with an extension added on Windows),
// else the first match in $PATH; nullopt when there is none or it is not executable.
std::optional<std::string> find_program(const std::string& program);

// The command that opens `url` in the desktop's browser (`ui --open`): POSIX `xdg-open URL`,
// Windows `rundll32.exe url.dll,FileProtocolHandler URL` (the shell's handler for the URL's scheme).
std::vector<std::string> open_url_command(const std::string& url);

// The argv that runs `line` through the system's shell (a job file's `shell:`): POSIX
// `/bin/sh -c LINE`, Windows `cmd.exe /c LINE`.
std::vector<std::string> shell_command(const std::string& line);

}  // namespace ddp::platform
