// SPDX-License-Identifier: Apache-2.0
// NVML through dlopen/dlsym.
#include "uct/cuda/base/nvml.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "uct/base/dl_lib.h"

namespace mc::uct::cuda {

namespace {

// nvml.h's ABI: nvmlReturn_t is an int (0 NVML_SUCCESS), nvmlDevice_t an
// opaque pointer; nvmlGpuFabricInfo_t is
//   unsigned char clusterUuid[16]; nvmlReturn_t status; unsigned int cliqueId;
//   unsigned char state (0 not supported, 1 not started, 2 in progress, 3 completed)
struct NvmlFabricInfo {
  unsigned char cluster_uuid[16];
  int status;
  unsigned int clique_id;
  unsigned char state;
};
using Device = struct NvmlDeviceOpaque*;

struct Nvml {
  int (*init)() = nullptr;                                     // nvmlInit_v2
  int (*by_uuid)(const char* uuid, Device* device) = nullptr;  // nvmlDeviceGetHandleByUUID
  int (*fabric_info)(Device device, NvmlFabricInfo* info) = nullptr;  // nvmlDeviceGetGpuFabricInfo
  std::string why;  // empty when usable
};

std::unique_ptr<Nvml> load(const std::string& library) {
  auto n = std::make_unique<Nvml>();
  std::string e;
  void* lib = dl_open(library, &e);
  if (!lib) {
    n->why = library + " not found: " + e;
    return n;
  }
  if (!dl_bind(lib, library, "nvmlInit_v2", &n->init, &n->why) ||
      !dl_bind(lib, library, "nvmlDeviceGetHandleByUUID", &n->by_uuid, &n->why) ||
      !dl_bind(lib, library, "nvmlDeviceGetGpuFabricInfo", &n->fabric_info, &n->why)) {
    return n;  // an NVML before 12.x: no fabric information
  }
  const int rc = n->init();
  if (rc != 0) n->why = library + ": nvmlInit_v2 returned " + std::to_string(rc);
  return n;
}

const Nvml& nvml(const std::string& library) {
  static std::mutex lock;
  static std::map<std::string, std::unique_ptr<Nvml>> loaded;
  std::lock_guard guard(lock);
  std::unique_ptr<Nvml>& n = loaded[library];
  if (!n) n = load(library);
  return *n;
}

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as NVML names a GPU.
std::string nvml_uuid(const std::array<uint8_t, 16>& u) {
  char s[48];
  std::snprintf(s, sizeof(s),
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                u[14], u[15]);
  return s;
}

const char* state_name(unsigned char state) {
  switch (state) {
    case 0: return "not supported (not in an NVLink domain)";
    case 1: return "not started (the fabric manager has not registered it)";
    case 2: return "in progress";
    case 3: return "completed";
  }
  return "unknown";
}

}  // namespace

bool nvml_gpu_fabric(const std::string& library, const std::array<uint8_t, 16>& uuid,
                     GpuFabric* out, std::string* why) {
  const Nvml& n = nvml(library);
  if (!n.why.empty()) {
    *why = "NVML: " + n.why;
    return false;
  }
  const std::string name = nvml_uuid(uuid);
  Device d = nullptr;
  int rc = n.by_uuid(name.c_str(), &d);
  if (rc != 0) {
    *why = "NVML does not know " + name + " (nvmlDeviceGetHandleByUUID returned " +
           std::to_string(rc) + ")";
    return false;
  }
  NvmlFabricInfo info{};
  rc = n.fabric_info(d, &info);
  if (rc != 0) {
    *why = "nvmlDeviceGetGpuFabricInfo(" + name + ") returned " + std::to_string(rc);
    return false;
  }
  if (info.state != 3 || info.status != 0) {
    *why = name + " fabric state: " + state_name(info.state) +
           (info.status != 0 ? ", status " + std::to_string(info.status) : "");
    return false;
  }
  std::memcpy(out->cluster_uuid.data(), info.cluster_uuid, 16);
  out->clique_id = info.clique_id;
  return true;
}

}  // namespace mc::uct::cuda
