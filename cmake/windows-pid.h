/* Force-included in the Windows build (cmake/windows-deps.cmake). mingw-w64 makes pid_t 64-bit on
   Win64, yet Windows process ids are DWORDs (32 bits) and every pid this code handles — in events,
   run records, summaries — is an int, as on Linux. So pid_t is int here too; no API this build
   calls takes a pid_t. Defining _PID_T_ keeps <sys/types.h> from declaring its own. */
#ifndef DDP_WINDOWS_PID_H
#define DDP_WINDOWS_PID_H
#define _PID_T_
typedef int _pid_t;
typedef int pid_t;
#endif
