// SPDX-License-Identifier: Apache-2.0
// mc.Batch: submit (with a notification), status, wait with a timeout, free;
// TaskState and TaskStatus. A request's local memory must lie in a
// registration of the batch's engine, and a READ's in a writable one.
#include <pybind11/stl.h>

#include <cstdio>
#include <set>

#include "py_engine.h"
#include "py_wait.h"

namespace mc::py {

namespace pyb = pybind11;
using namespace pybind11::literals;

namespace {

bool ended(TaskStatus s) {
  return s != WAITING && s != PENDING;
}

// The status a task's end stands for, for the TransferError it raises.
int status_of(TaskStatus s) {
  switch (s) {
    case TIMEOUT: return kTimeout;
    case INVALID: return kInvalidParam;
    case CANCELED: return kCanceled;
    default: return -5;  // IoError: the transfer failed
  }
}

}  // namespace

Batch::~Batch() {
  if (freed_) return;
  // mc may touch the registrations until the tasks end: wait for them (a
  // signal handler's exception is dropped here), then free.
  try {
    std::vector<TransferStatus> st;
    if (submitted_ > 0) (void)wait_ended(std::nullopt, st);
  } catch (pyb::error_already_set&) {
  }
  try {
    free();
  } catch (const StatusError&) {
  }
}

void Batch::submit(const std::vector<Request>& requests, const std::optional<pyb::tuple>& notify) {
  if (freed_) throw StatusError{kInvalidParam, "submit: the batch was freed"};
  if (requests.size() > capacity_ - submitted_) {
    throw StatusError{kInvalidParam, "submit: " + std::to_string(requests.size()) +
                                         " requests exceed what is left of the batch (" +
                                         std::to_string(capacity_ - submitted_) + " of " +
                                         std::to_string(capacity_) + ")"};
  }
  std::optional<NotifyDesc> note;
  if (notify) {
    if (notify->size() != 2)
      throw StatusError{kInvalidParam, "submit: notify is a (name, message) pair"};
    note = NotifyDesc{bytes_of((*notify)[0], "name"), bytes_of((*notify)[1], "message")};
  }
  std::vector<TransferRequest> reqs;
  std::vector<std::shared_ptr<RegState>> used;
  reqs.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    std::shared_ptr<RegState> reg = engine_->find(r.local, r.length);
    if (!reg || (r.reg && reg != r.reg)) {
      throw StatusError{kInvalidParam,
                        "request " + std::to_string(i) + ": local memory [" + hex(r.local) + ", +" +
                            std::to_string(r.length) +
                            ") is in no registration of this engine (register_memory first)"};
    }
    if (r.op == TransferRequest::READ && reg->mem.readonly) {
      throw StatusError{kInvalidParam, "request " + std::to_string(i) +
                                           ": a READ into read-only memory (" + reg->mem.kind +
                                           " at " + hex(reg->mem.addr) + ") cannot land"};
    }
    reqs.push_back({r.op, reinterpret_cast<void*>(r.local), r.segment, r.remote, r.length});
    used.push_back(std::move(reg));
  }
  std::set<RegState*> have;
  for (const auto& r : regs_) have.insert(r.get());
  std::vector<std::shared_ptr<RegState>> added;
  for (auto& r : used) {
    if (have.insert(r.get()).second) {
      ++r->batches;
      added.push_back(r);
    }
  }
  const int rc = engine_->call("submit", [&](TransferEngine& e) {
    return note ? e.submitTransferWithNotify(id_, reqs, *note) : e.submitTransfer(id_, reqs);
  });
  if (rc != 0) {
    for (auto& r : added) --r->batches;
    check(rc < 0 ? rc : kInvalidParam,
          note ? "submit with notify: refused (every request must target one open segment; a "
                 "notification "
                 "still pending is Busy; past MC_NOTIFY_MAX_SIZE MessageTruncated)"
               : "submit: refused");
  }
  regs_.insert(regs_.end(), added.begin(), added.end());
  submitted_ += requests.size();
}

std::vector<TransferStatus> Batch::status() {
  if (freed_) throw StatusError{kInvalidParam, "status: the batch was freed"};
  std::vector<TransferStatus> st;
  check(
      engine_->call("status", [&](TransferEngine& e) { return e.getBatchTransferStatus(id_, st); }),
      "status");
  return st;
}

int Batch::wait_ended(std::optional<Clock::time_point> deadline, std::vector<TransferStatus>& st) {
  const long total = static_cast<long>(submitted_);
  pyb::gil_scoped_release nogil;
  return poll_until(
      [&]() -> long {
        std::shared_lock lock(engine_->mu);
        if (!engine_->engine) return kInvalidParam;
        const int r = engine_->engine->getBatchTransferStatus(id_, st);
        if (r != 0) return r < 0 ? r : kInvalidParam;
        long n = 0;
        for (const TransferStatus& s : st) n += ended(s.s);
        return n;
      },
      total, deadline);
}

std::vector<TransferStatus> Batch::wait(std::optional<double> timeout) {
  if (freed_) throw StatusError{kInvalidParam, "wait: the batch was freed"};
  const auto deadline = deadline_of(timeout);
  std::vector<TransferStatus> st;
  const long total = static_cast<long>(submitted_);
  const int rc = wait_ended(deadline, st);
  if (rc == kTimeout) {
    long running = 0;
    for (const TransferStatus& s : st) running += !ended(s.s);
    throw StatusError{kTimeout, "wait: " + std::to_string(running) + " of " +
                                    std::to_string(total) + " tasks still running after " +
                                    std::to_string(*timeout) + " s"};
  }
  check(rc, "wait: the batch's status (the engine closed?)");
  std::string bad;
  int first = 0;
  for (size_t i = 0; i < st.size(); ++i) {
    if (st[i].s == COMPLETED) continue;
    if (!first) first = status_of(st[i].s);
    if (bad.size() < 200)
      bad += (bad.empty() ? "" : ", ") + std::string("task ") + std::to_string(i) + " " +
             task_status_name(st[i].s);
  }
  if (first) {
    pyb::object err =
        pyb::module_::import("mc.errors")
            .attr("TransferError")("wait: " + bad + " (mc's log says why)", first, pyb::cast(st));
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(err.ptr())), err.ptr());
    throw pyb::error_already_set();
  }
  return st;
}

int Batch::notify_status() {
  if (freed_) throw StatusError{kInvalidParam, "notify_status: the batch was freed"};
  return engine_->call("notify_status",
                       [&](TransferEngine& e) { return e.getBatchNotifyStatus(id_); });
}

void Batch::wait_notify(std::optional<double> timeout) {
  if (freed_) throw StatusError{kInvalidParam, "wait_notify: the batch was freed"};
  const auto deadline = deadline_of(timeout);
  int last = 1;
  int rc;
  {
    pyb::gil_scoped_release nogil;
    rc = poll_until(
        [&]() -> long {
          std::shared_lock lock(engine_->mu);
          if (!engine_->engine) return kInvalidParam;
          last = engine_->engine->getBatchNotifyStatus(id_);
          return last == 1 ? 0 : 1;
        },
        1, deadline);
  }
  if (rc == kTimeout) {
    throw StatusError{
        kTimeout, "wait_notify: not taken by the target after " + std::to_string(*timeout) + " s"};
  }
  check(rc, "wait_notify: the engine closed");
  check(last, last == kNoElem ? "wait_notify: the batch has no notification"
                              : "wait_notify: not delivered (Canceled: a task did not complete)");
}

void Batch::free() {
  if (freed_) return;
  const int rc = engine_->call("free", [&](TransferEngine& e) { return e.freeBatchID(id_); });
  if (rc != 0 && engine_->engine) {
    check(rc < 0 ? rc : kBusy, "free: tasks of the batch are still running");
  }
  freed_ = true;
  release_regs();
}

void Batch::release_regs() {
  for (auto& r : regs_) --r->batches;
  regs_.clear();
}

void bind_batch(pyb::module_& m) {
  pyb::enum_<TaskStatus>(m, "TaskState",
                         "Where a task is; it ends COMPLETED, FAILED, TIMEOUT or INVALID.")
      .value("WAITING", WAITING)
      .value("PENDING", PENDING)
      .value("INVALID", INVALID)
      .value("CANCELED", CANCELED)
      .value("COMPLETED", COMPLETED)
      .value("TIMEOUT", TIMEOUT)
      .value("FAILED", FAILED);

  pyb::class_<TransferStatus>(m, "TaskStatus",
                              "A task's state and a lower bound of the bytes that arrived.")
      .def_readonly("state", &TransferStatus::s)
      .def_readonly("transferred", &TransferStatus::transferred)
      .def("__repr__", [](const TransferStatus& s) {
        return std::string("<mc.TaskStatus ") + task_status_name(s.s) + " " +
               std::to_string(s.transferred) + " B>";
      });

  pyb::class_<Batch>(
      m, "Batch",
      "Up to `capacity` tasks: submit() queues requests, wait() returns once they ended, free() "
      "(or the end of a with block) frees it.")
      .def_property_readonly("capacity", &Batch::capacity)
      .def_property_readonly("submitted", &Batch::submitted)
      .def_property_readonly("id", &Batch::id)
      .def("submit", &Batch::submit,
           "Queues `requests` and returns at once. With notify=(name, message), the target takes "
           "the "
           "notification after every task COMPLETED.",
           "requests"_a, pyb::kw_only(), "notify"_a = pyb::none())
      .def("status", &Batch::status, "The TaskStatus of every task submitted so far.")
      .def("wait", &Batch::wait, "timeout"_a = pyb::none(),
           "Waits, with the GIL released, until every task ended: their TaskStatus. TimeoutError "
           "past "
           "`timeout` seconds; TransferError (with .tasks) when a task did not complete.")
      .def("notify_status", &Batch::notify_status,
           "The batch's notification: 1 while pending, 0 once taken, else mc's negative status.")
      .def("wait_notify", &Batch::wait_notify, "timeout"_a = pyb::none(),
           "Waits, with the GIL released, until the target took the batch's notification; raises "
           "why it was not (CanceledError: a task did not complete).")
      .def("free", &Batch::free, "Frees the batch: BusyError while tasks run.")
      .def("__enter__", [](pyb::object self) { return self; })
      .def("__exit__", [](Batch& b, pyb::args) {
        // The tasks' end, not their outcome: wait() in the block says that.
        std::vector<TransferStatus> st;
        if (b.submitted() > 0) check(b.wait_ended(std::nullopt, st), "the end of a with block");
        b.free();
      });
}

}  // namespace mc::py
