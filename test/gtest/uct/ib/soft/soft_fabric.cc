// SPDX-License-Identifier: Apache-2.0
// The soft provider's shared-memory fabric.
#include "uct/ib/soft/soft_fabric.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "ucs/log/log.h"

namespace mc::uct::ib::soft {

namespace {

constexpr uint32_t kMagic = 0x4d434942;  // "MCIB"
constexpr uint32_t kVersion = 2;         // 2: MrSlot::base

std::string shm_path(const std::string& name) { return "/dev/shm/mc-ibsoft-" + name; }

bool pid_alive(int32_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH); }

ucs::Status init_layout(FabricLayout* f) {
  std::memset(f, 0, offsetof(FabricLayout, mr));
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  const int rc = pthread_mutex_init(&f->lock, &attr);
  pthread_mutexattr_destroy(&attr);
  if (rc != 0) {
    MC_LOG(error) << "ib soft: pthread_mutex_init: " << std::strerror(rc);
    return ucs::Status::IoError;
  }
  f->generation = 1;
  f->version = kVersion;
  __atomic_store_n(&f->magic, kMagic, __ATOMIC_RELEASE);
  return ucs::Status::Ok;
}

ucs::Result<FabricLayout*> map_fabric(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    MC_LOG(error) << "ib soft: open " << path << ": " << std::strerror(errno);
    return ucs::Status::IoError;
  }
  // flock serialises the first initialisation between processes.
  flock(fd, LOCK_EX);
  struct stat st {};
  fstat(fd, &st);
  if (static_cast<size_t>(st.st_size) < sizeof(FabricLayout) &&
      ftruncate(fd, sizeof(FabricLayout)) != 0) {
    MC_LOG(error) << "ib soft: ftruncate " << path << ": " << std::strerror(errno);
    close(fd);
    return ucs::Status::IoError;
  }
  void* p = mmap(nullptr, sizeof(FabricLayout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    MC_LOG(error) << "ib soft: mmap " << path << ": " << std::strerror(errno);
    close(fd);
    return ucs::Status::IoError;
  }
  auto* f = static_cast<FabricLayout*>(p);
  ucs::Status s = ucs::Status::Ok;
  if (f->magic == 0) {
    s = init_layout(f);
  } else if (f->magic != kMagic || f->version != kVersion) {
    MC_LOG(error) << "ib soft: " << path << " is not a version " << kVersion << " fabric";
    s = ucs::Status::VersionMismatch;
  }
  flock(fd, LOCK_UN);
  close(fd);
  if (s != ucs::Status::Ok) {
    munmap(p, sizeof(FabricLayout));
    return s;
  }
  return f;
}

}  // namespace

ucs::Result<Fabric*> Fabric::open(const std::string& name) {
  static std::mutex lock;
  static Fabric* fabric = nullptr;
  std::lock_guard guard(lock);
  if (fabric) {
    if (fabric->name() != name) {
      MC_LOG(error) << "ib soft: this process already uses fabric '" << fabric->name()
                    << "', not '" << name << "'";
      return ucs::Status::InvalidParam;
    }
    return fabric;
  }
  MC_ASSIGN_OR_RETURN(FabricLayout * layout, map_fabric(shm_path(name)));
  // Peers read and write registered memory of this process with
  // process_vm_readv/writev, as the NIC would by DMA; let them under Yama.
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  fabric = new Fabric(name, layout);
  Guard g(fabric);
  fabric->reap_dead();
  return fabric;
}

void Fabric::unlink(const std::string& name) { ::unlink(shm_path(name).c_str()); }

Fabric::Guard::Guard(Fabric* f) : f_(f) {
  if (pthread_mutex_lock(&f_->layout_->lock) == EOWNERDEAD) {
    // A process died holding the lock: slots it was changing are reaped.
    pthread_mutex_consistent(&f_->layout_->lock);
    f_->reap_dead();
  }
}

Fabric::Guard::~Guard() { pthread_mutex_unlock(&f_->layout_->lock); }

void Fabric::reap_dead() {
  for (MrSlot& m : layout_->mr) {
    if (m.key != 0 && !pid_alive(m.pid)) m.key = 0;
  }
  for (QpSlot& q : layout_->qp) {
    if (q.qpn != 0 && !pid_alive(q.pid)) q.qpn = 0;
  }
}

uint32_t Fabric::next_generation() {
  uint32_t g = ++layout_->generation;
  if ((g & 0x3fff) == 0) g = ++layout_->generation;
  return g;
}

MrSlot* Fabric::mr_alloc() {
  for (uint32_t i = 0; i < kMaxMr; ++i) {
    MrSlot& m = layout_->mr[i];
    if (m.key != 0) continue;
    std::memset(&m, 0, sizeof(m));
    m.key = ((next_generation() & 0xfffff) << 12) | i;
    m.pid = getpid();
    return &m;
  }
  return nullptr;
}

MrSlot* Fabric::mr_find(uint32_t key) {
  MrSlot& m = layout_->mr[key & (kMaxMr - 1)];
  return m.key != 0 && m.key == key ? &m : nullptr;
}

QpSlot* Fabric::qp_alloc() {
  for (uint32_t i = 0; i < kMaxQp; ++i) {
    QpSlot& q = layout_->qp[i];
    if (q.qpn != 0) continue;
    std::memset(&q, 0, offsetof(QpSlot, ring));
    q.qpn = ((next_generation() & 0x3fff) << 10) | i;
    q.pid = getpid();
    return &q;
  }
  return nullptr;
}

QpSlot* Fabric::qp_find(uint32_t qpn) {
  QpSlot& q = layout_->qp[qpn & (kMaxQp - 1)];
  return q.qpn != 0 && q.qpn == qpn ? &q : nullptr;
}

bool Fabric::device_failed(uint32_t dev) const {
  return dev >= kMaxDevices || layout_->device_failed[dev] != 0;
}

ucs::Status set_device_failed(const std::string& fabric, uint32_t dev, bool failed) {
  MC_ASSIGN_OR_RETURN(Fabric * f, Fabric::open(fabric));
  if (dev >= kMaxDevices) return ucs::Status::NoElem;
  Fabric::Guard g(f);
  f->layout()->device_failed[dev] = failed ? 1 : 0;
  return ucs::Status::Ok;
}

ucs::Status fail_qp(const std::string& fabric, uint32_t qpn) {
  MC_ASSIGN_OR_RETURN(Fabric * f, Fabric::open(fabric));
  Fabric::Guard g(f);
  QpSlot* q = f->qp_find(qpn);
  if (!q) return ucs::Status::NoElem;
  q->failed = 1;
  return ucs::Status::Ok;
}

}  // namespace mc::uct::ib::soft
