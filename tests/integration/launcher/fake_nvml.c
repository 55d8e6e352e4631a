/* A stand-in for libnvidia-ml.so.1 so the GPU watch can be tested without a GPU: it exports the
 * NVML symbols ddp-launch calls (common/gpu.cpp) and reads its devices from the file named by
 * $FAKE_NVML_FILE on every call, one line per device: "<util %> <used MiB> <total MiB> [pids]",
 * pids (optional) a comma-separated list of the pids with a compute context on it
 * (nvmlDeviceGetComputeRunningProcesses_v3). The test rewrites the file to drive utilisation low,
 * then high, or to free a dead rank's memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  unsigned gpu, memory;
} nvmlUtilization_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
  unsigned pid;
  unsigned long long usedGpuMemory;
  unsigned gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

enum {
  OK = 0,
  INVALID_ARGUMENT = 2,
  NOT_SUPPORTED = 3,
  INSUFFICIENT_SIZE = 7,
  UNKNOWN = 999,
  MAX_DEVICES = 16,
  MAX_PIDS = 64
};

/* Device `want`'s pids (when pids != NULL), and the device count. */
static int read_file(unsigned util[], unsigned long long used[], unsigned long long total[], int want, unsigned pids[],
                     unsigned* npids) {
  const char* path = getenv("FAKE_NVML_FILE");
  FILE* f = path ? fopen(path, "r") : NULL;
  char line[1024];
  int n = 0;
  if (!f) return -1;
  while (n < MAX_DEVICES && fgets(line, sizeof line, f)) {
    int used_chars = 0;
    if (sscanf(line, "%u %llu %llu%n", &util[n], &used[n], &total[n], &used_chars) != 3) continue;
    if (pids && n == want) {
      char* p = line + used_chars;
      *npids = 0;
      while (*npids < MAX_PIDS) {
        char* end;
        unsigned long v;
        while (*p == ' ' || *p == ',') ++p;
        v = strtoul(p, &end, 10);
        if (end == p) break;
        pids[(*npids)++] = (unsigned)v;
        p = end;
      }
    }
    ++n;
  }
  fclose(f);
  return n;
}

static int read_devices(unsigned util[], unsigned long long used[], unsigned long long total[]) {
  return read_file(util, used, total, -1, NULL, NULL);
}

int nvmlInit_v2(void) { return getenv("FAKE_NVML_FILE") ? OK : UNKNOWN; }
int nvmlShutdown(void) { return OK; }
const char* nvmlErrorString(int rc) { return rc == INVALID_ARGUMENT ? "Invalid Argument" : "Unknown Error"; }

int nvmlDeviceGetCount_v2(unsigned* count) {
  unsigned util[MAX_DEVICES];
  unsigned long long used[MAX_DEVICES], total[MAX_DEVICES];
  int n = read_devices(util, used, total);
  if (n < 0) return UNKNOWN;
  *count = (unsigned)n;
  return OK;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  unsigned count = 0;
  if (nvmlDeviceGetCount_v2(&count) != OK) return UNKNOWN;
  if (index >= count) return INVALID_ARGUMENT;
  *device = (void*)(size_t)(index + 1);
  return OK;
}

int nvmlDeviceGetHandleByUUID(const char* uuid, void** device) {
  (void)uuid;
  (void)device;
  return NOT_SUPPORTED;
}

int nvmlDeviceGetUtilizationRates(void* device, nvmlUtilization_t* u) {
  unsigned util[MAX_DEVICES];
  unsigned long long used[MAX_DEVICES], total[MAX_DEVICES];
  int n = read_devices(util, used, total);
  size_t i = (size_t)device - 1;
  if (n < 0 || i >= (size_t)n) return INVALID_ARGUMENT;
  u->gpu = util[i];
  u->memory = util[i];
  return OK;
}

int nvmlDeviceGetMemoryInfo(void* device, nvmlMemory_t* m) {
  unsigned util[MAX_DEVICES];
  unsigned long long used[MAX_DEVICES], total[MAX_DEVICES];
  int n = read_devices(util, used, total);
  size_t i = (size_t)device - 1;
  if (n < 0 || i >= (size_t)n) return INVALID_ARGUMENT;
  m->used = used[i] << 20;
  m->total = total[i] << 20;
  m->free = m->total - m->used;
  return OK;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void* device, unsigned* count, nvmlProcessInfo_t* infos) {
  unsigned util[MAX_DEVICES], pids[MAX_PIDS], npids = 0, i;
  unsigned long long used[MAX_DEVICES], total[MAX_DEVICES];
  size_t d = (size_t)device - 1;
  int n = read_file(util, used, total, (int)d, pids, &npids);
  if (n < 0 || d >= (size_t)n) return INVALID_ARGUMENT;
  if (*count < npids) {
    *count = npids;
    return INSUFFICIENT_SIZE;
  }
  for (i = 0; i < npids; ++i) {
    memset(&infos[i], 0, sizeof infos[i]);
    infos[i].pid = pids[i];
    infos[i].usedGpuMemory = 1ull << 30;
  }
  *count = npids;
  return OK;
}
