// SPDX-License-Identifier: Apache-2.0
// io_uring and preadv/pwritev engines.
#include "uct/nvmeof/nvmeof_io.h"

#include <liburing.h>
#include <unistd.h>

#include <cerrno>

#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::uct::nvmeof {

namespace {

// Drops the first `n` bytes of `iov`.
void trim_front(std::vector<iovec>* iov, size_t n) {
  size_t i = 0;
  while (i < iov->size() && n >= (*iov)[i].iov_len) n -= (*iov)[i++].iov_len;
  iov->erase(iov->begin(), iov->begin() + static_cast<long>(i));
  if (n > 0 && !iov->empty()) {
    (*iov)[0].iov_base = static_cast<char*>((*iov)[0].iov_base) + n;
    (*iov)[0].iov_len -= n;
  }
}

// preadv/pwritev in progress(): at most queue_depth requests per call.
class SyncEngine : public IoEngine {
 public:
  explicit SyncEngine(unsigned queue_depth) : IoEngine(queue_depth) {}
  const char* name() const override { return "preadv/pwritev"; }
  void submit(std::unique_ptr<IoRequest> req) override { backlog_.push_back(std::move(req)); }

  unsigned progress() override {
    unsigned events = 0;
    for (unsigned k = 0; k < queue_depth_ && !backlog_.empty(); ++k) {
      std::unique_ptr<IoRequest> req = std::move(backlog_.front());
      backlog_.pop_front();
      started();
      bool failed = false;
      for (;;) {
        const off_t off = static_cast<off_t>(req->offset + req->done_bytes);
        const int cnt = static_cast<int>(req->iov.size());
        ssize_t n = req->write ? pwritev(req->fd, req->iov.data(), cnt, off)
                               : preadv(req->fd, req->iov.data(), cnt, off);
        if (n < 0 && errno == EINTR) continue;
        if (account(req.get(), n < 0 ? -errno : n, &failed) || failed) break;
      }
      --in_flight_;
      req->done(failed ? Status::IoError : Status::Ok);
      ++events;
    }
    return events;
  }
};

class UringEngine : public IoEngine {
 public:
  explicit UringEngine(unsigned queue_depth) : IoEngine(queue_depth) {}
  ~UringEngine() override;
  int init() { return io_uring_queue_init(queue_depth_, &ring_, 0); }
  const char* name() const override { return "io_uring"; }
  void submit(std::unique_ptr<IoRequest> req) override {
    backlog_.push_back(std::move(req));
    start_waiting();
  }
  unsigned progress() override;

 private:
  void start_waiting();
  io_uring ring_{};
  bool ring_ok_ = false;
  friend std::unique_ptr<IoEngine> IoEngine::create(unsigned, bool);
};

UringEngine::~UringEngine() {
  if (!ring_ok_) return;
  // The kernel may still write into user memory: wait for every request.
  if (in_flight_ > 0) {
    MC_LOG(warn) << "nvmeof: iface closed with " << in_flight_
                 << " file operation(s) in flight; waiting for them, their completions are dropped";
  }
  while (in_flight_ > 0) {
    io_uring_cqe* cqe = nullptr;
    if (io_uring_wait_cqe(&ring_, &cqe) != 0) break;
    delete static_cast<IoRequest*>(io_uring_cqe_get_data(cqe));
    io_uring_cqe_seen(&ring_, cqe);
    --in_flight_;
  }
  io_uring_queue_exit(&ring_);
}

void UringEngine::start_waiting() {
  unsigned prepared = 0;
  while (in_flight_ < queue_depth_ && !backlog_.empty()) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (!sqe) break;
    IoRequest* req = backlog_.front().release();
    backlog_.pop_front();
    const uint64_t off = req->offset + req->done_bytes;
    const auto cnt = static_cast<unsigned>(req->iov.size());
    if (req->write) {
      io_uring_prep_writev(sqe, req->fd, req->iov.data(), cnt, off);
    } else {
      io_uring_prep_readv(sqe, req->fd, req->iov.data(), cnt, off);
    }
    io_uring_sqe_set_data(sqe, req);
    started();
    ++prepared;
  }
  // Prepared entries stay in the submission ring when submit fails for lack
  // of resources (EAGAIN/EBUSY); the next progress() submits them again.
  if (prepared > 0 || io_uring_sq_ready(&ring_) > 0) {
    const int rc = io_uring_submit(&ring_);
    if (rc < 0 && rc != -EAGAIN && rc != -EBUSY && rc != -EINTR) {
      MC_LOG(error) << "nvmeof: io_uring_submit failed: " << ucs::errno_string(-rc);
    }
  }
}

unsigned UringEngine::progress() {
  unsigned events = 0;
  io_uring_cqe* cqe = nullptr;
  while (io_uring_peek_cqe(&ring_, &cqe) == 0 && cqe) {
    std::unique_ptr<IoRequest> req(static_cast<IoRequest*>(io_uring_cqe_get_data(cqe)));
    const int res = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    --in_flight_;
    bool failed = false;
    if (account(req.get(), res, &failed) || failed) {
      req->done(failed ? Status::IoError : Status::Ok);
      ++events;
    } else {
      backlog_.push_front(std::move(req));  // partial: the rest goes first
    }
  }
  start_waiting();
  return events;
}

}  // namespace

bool IoEngine::account(IoRequest* req, long n, bool* failed) {
  const char* op = req->write ? "write" : "read";
  if (n < 0) {
    MC_LOG(error) << "nvmeof: " << op << " of " << req->length << " bytes at offset " << req->offset
                  << " of " << req->path << " failed: " << ucs::errno_string(-n);
    *failed = true;
    return false;
  }
  if (n == 0 && req->done_bytes < req->length) {
    MC_LOG(error) << "nvmeof: short " << op << " of " << req->path << ": " << req->done_bytes
                  << " of " << req->length << " bytes at offset " << req->offset
                  << (req->write ? " (no space left)" : " (end of file: truncated?)");
    *failed = true;
    return false;
  }
  req->done_bytes += static_cast<size_t>(n);
  trim_front(&req->iov, static_cast<size_t>(n));
  return req->done_bytes >= req->length;
}

std::unique_ptr<IoEngine> IoEngine::create(unsigned queue_depth, bool use_uring) {
  if (use_uring) {
    auto uring = std::make_unique<UringEngine>(queue_depth);
    const int rc = uring->init();
    if (rc == 0) {
      uring->ring_ok_ = true;
      return uring;
    }
    MC_LOG(warn) << "nvmeof: io_uring_queue_init(" << queue_depth
                 << ") failed: " << ucs::errno_string(-rc) << "; using preadv/pwritev";
  }
  return std::make_unique<SyncEngine>(queue_depth);
}

}  // namespace mc::uct::nvmeof
