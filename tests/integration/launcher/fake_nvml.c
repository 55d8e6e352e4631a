/* A stand-in for libnvidia-ml.so.1 so the GPU watch can be tested without a GPU: it exports the
 * NVML symbols ddp-launch calls (common/gpu.cpp) and reads its devices from the file named by
 * $FAKE_NVML_FILE on every call, one line per device: "<util %> <used MiB> <total MiB>". The
 * test rewrites the file to drive utilisation low, then high. */
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  unsigned gpu, memory;
} nvmlUtilization_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

enum { OK = 0, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3, UNKNOWN = 999, MAX_DEVICES = 16 };

static int read_devices(unsigned util[], unsigned long long used[], unsigned long long total[]) {
  const char* path = getenv("FAKE_NVML_FILE");
  FILE* f = path ? fopen(path, "r") : NULL;
  int n = 0;
  if (!f) return -1;
  while (n < MAX_DEVICES && fscanf(f, "%u %llu %llu", &util[n], &used[n], &total[n]) == 3) ++n;
  fclose(f);
  return n;
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
