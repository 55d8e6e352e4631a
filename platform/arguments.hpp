#pragma once
// This program's command line and console as UTF-8 (implemented in posix/host.cpp, windows/host.cpp).
#include <string>
#include <vector>

namespace ddp::platform {

// This program's arguments as UTF-8, argv[0] first. POSIX: argv as given. Windows: the process's
// UTF-16 command line split as the C runtime splits it (CommandLineToArgvW), so that an é or a 中
// in an argument is not the ANSI code page's '?' that main's argv holds.
std::vector<std::string> utf8_arguments(int argc, char** argv);
// Text written to a console is UTF-8 (Windows: SetConsoleOutputCP(CP_UTF8); POSIX: nothing to do).
void use_utf8_console();

}  // namespace ddp::platform
