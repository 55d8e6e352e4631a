#pragma once
// pid_t, the process id type every platform header speaks (glibc and mingw-w64 both define it in
// <sys/types.h>), for the layers above that keep pids without calling the OS.
#include <sys/types.h>
