#pragma once
// This process and its machine, as the launcher's host facts read them.
#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>

namespace ddp::platform {

enum class Os { Posix, Windows };
Os this_os();  // the build's: what the pure rules are told (launcher/run/host_facts.hpp)

pid_t current_pid();
std::string host_name();                           // "" when the OS will not say
std::map<std::string, std::string> environment();  // this process's variables
std::filesystem::path executable_path();           // this program's file (empty when unknown)
bool stdin_is_terminal();
// n bytes from the OS's CSPRNG (POSIX: getrandom; Windows: BCryptGenRandom); throws std::system_error.
std::string random_bytes(std::size_t n);  // someone can answer a question (POSIX: a tty; Windows: a console)

}  // namespace ddp::platform
