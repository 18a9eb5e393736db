// SPDX-License-Identifier: Apache-2.0
// mc.TransferEngine, Registration, Segment, Request and Notification.
#include "py_engine.h"

#include <pybind11/stl.h>

#include <cstdio>

#include "py_info.h"
#include "py_wait.h"
#include "ucp/metadata/store.h"

namespace mc::py {

namespace pyb = pybind11;
using namespace pybind11::literals;

namespace {

std::atomic<int> g_live_engines{0};

// The Python face of an engine: the state the other objects share.
class Engine {
 public:
  Engine(const std::string& metadata, const std::string& local_server_name,
         const std::optional<std::string>& ip_or_host_name, uint16_t rpc_port,
         const std::map<std::string, std::string>& config)
      : st_(std::make_shared<EngineState>()) {
    for (const auto& [name, value] : config) check_knob(name, value);
    st_->engine = std::make_unique<TransferEngine>();
    st_->p2p = metadata::is_p2p(metadata);
    for (const auto& [name, value] : config) {
      check(st_->engine->setConfig(name, value), "config " + name);
    }
    const std::string what = "TransferEngine('" + metadata + "', '" + local_server_name + "')";
    const int rc = st_->call(what, [&](TransferEngine& e) {
      return ip_or_host_name || rpc_port != 0
                 ? e.init(metadata, local_server_name, ip_or_host_name.value_or(""), rpc_port)
                 : e.init(metadata, local_server_name);
    });
    if (rc != 0) {
      st_->engine.reset();
      throw StatusError{rc < 0 ? rc : kInvalidParam,
                        what + ": the engine did not start (mc's log says why)"};
    }
    st_->segment_name = st_->p2p ? st_->engine->getLocalIpAndPort() : local_server_name;
    ++g_live_engines;
  }
  ~Engine() {
    try {
      close();
    } catch (...) {
    }
  }

  void close() {
    bool was_open = false;
    {
      pyb::gil_scoped_release nogil;
      std::unique_lock lock(st_->mu);
      was_open = st_->engine != nullptr;
      st_->engine.reset();
    }
    // The registrations' memory goes with the GIL held.
    std::map<uintptr_t, std::shared_ptr<RegState>> regs;
    {
      std::lock_guard lock(st_->regs_mu);
      regs.swap(st_->regs);
    }
    regs.clear();
    if (was_open) --g_live_engines;
  }

  Registration register_memory(pyb::handle obj, std::optional<size_t> length,
                               const std::optional<std::string>& location, bool remote_accessible) {
    auto reg = std::make_shared<RegState>();
    reg->mem = memory_of(obj, length);
    reg->location = location.value_or(reg->mem.location());
    reg->remote_accessible = remote_accessible;
    const uintptr_t addr = reg->mem.addr;
    const size_t len = reg->mem.length;
    const std::string what =
        "register_memory(" + hex(addr) + ", " + std::to_string(len) + ", '" + reg->location + "')";
    check(st_->call(what,
                    [&](TransferEngine& e) {
                      return e.registerLocalMemory(reinterpret_cast<void*>(addr), len,
                                                   reg->location, remote_accessible);
                    }),
          what +
              ": refused (an overlap with a registered buffer, an unknown location, or memory the "
              "transports cannot register; mc's log says which)");
    {
      std::lock_guard lock(st_->regs_mu);
      st_->regs[addr] = reg;
    }
    return Registration{st_, reg};
  }

  void unregister(const std::shared_ptr<RegState>& reg) { unregister_memory(st_, reg); }

  void unregister_object(pyb::handle obj) {
    std::shared_ptr<RegState> reg;
    if (pyb::isinstance<Registration>(obj)) {
      reg = obj.cast<Registration&>().reg;
    } else {
      const uintptr_t addr =
          PyLong_Check(obj.ptr()) ? obj.cast<uintptr_t>() : memory_of(obj, std::nullopt).addr;
      std::lock_guard lock(st_->regs_mu);
      auto it = st_->regs.find(addr);
      if (it != st_->regs.end()) reg = it->second;
    }
    if (!reg)
      throw StatusError{kNoElem, "unregister_memory: nothing is registered at that address"};
    unregister_memory(st_, reg);
  }

  Segment open_segment(const std::string& name) {
    const std::string what = "open_segment('" + name + "')";
    const SegmentID id = st_->call(what, [&](TransferEngine& e) { return e.openSegment(name); });
    check(id, what + ": not found or not reachable (mc's log says why)");
    return Segment{st_, id, name};
  }

  std::unique_ptr<Batch> allocate_batch(size_t size) {
    const BatchID id =
        st_->call("allocate_batch", [&](TransferEngine& e) { return e.allocateBatchID(size); });
    if (id == kInvalidBatchID) {
      throw StatusError{kInvalidParam,
                        "allocate_batch(" + std::to_string(size) + "): refused (a size of 0?)"};
    }
    return std::make_unique<Batch>(st_, id, size);
  }

  std::vector<TransferStatus> transfer(const std::vector<Request>& requests,
                                       const std::optional<pyb::tuple>& notify,
                                       std::optional<double> timeout) {
    std::unique_ptr<Batch> b = allocate_batch(requests.size());
    b->submit(requests, notify);
    std::vector<TransferStatus> st = b->wait(timeout);
    if (notify) b->wait_notify(timeout);
    b->free();
    return st;
  }

  void send_notify(pyb::handle target, pyb::handle name, pyb::handle message) {
    NotifyDesc n{bytes_of(name, "name"), bytes_of(message, "message")};
    int rc;
    std::string what;
    if (pyb::isinstance<Segment>(target)) {
      const Segment& s = target.cast<const Segment&>();
      what = "send_notify('" + s.name + "')";
      rc = st_->call(what, [&](TransferEngine& e) { return e.sendNotifyByID(s.id, n); });
    } else {
      const std::string to = target.cast<std::string>();
      what = "send_notify('" + to + "')";
      rc = st_->call(what, [&](TransferEngine& e) { return e.sendNotifyByName(to, n); });
    }
    check(rc, what + ": not delivered");
  }

  pyb::list get_notifies() {
    std::vector<ReceivedNotify> got;
    check(st_->call("get_notifies", [&](TransferEngine& e) { return e.getNotifies(got); }),
          "get_notifies");
    pyb::object cls = pyb::module_::import("mc").attr("Notification");
    pyb::list out;
    for (const ReceivedNotify& r : got) {
      out.append(cls(r.sender,
                     pyb::reinterpret_steal<pyb::str>(PyUnicode_DecodeUTF8(
                         r.notify.name.data(), static_cast<Py_ssize_t>(r.notify.name.size()),
                         "surrogateescape")),
                     pyb::bytes(r.notify.notify_msg)));
    }
    return out;
  }

  const std::shared_ptr<EngineState>& state() const { return st_; }

 private:
  std::shared_ptr<EngineState> st_;
};

}  // namespace

std::shared_ptr<RegState> EngineState::find(uintptr_t addr, size_t len) {
  std::lock_guard lock(regs_mu);
  auto it = regs.upper_bound(addr);
  if (it == regs.begin()) return nullptr;
  --it;
  const RegState& r = *it->second;
  if (addr < r.mem.addr || len > r.mem.length || addr - r.mem.addr > r.mem.length - len)
    return nullptr;
  return it->second;
}

void unregister_memory(const std::shared_ptr<EngineState>& st,
                       const std::shared_ptr<RegState>& reg) {
  const uintptr_t addr = reg->mem.addr;
  const std::string what = "unregister_memory(" + hex(addr) + ")";
  {
    std::lock_guard lock(st->regs_mu);
    auto it = st->regs.find(addr);
    if (it == st->regs.end() || it->second != reg) {
      throw StatusError{kNoElem, what + ": not registered with this engine"};
    }
    if (reg->batches.load() > 0) {
      throw StatusError{kBusy, what + ": used by " + std::to_string(reg->batches.load()) +
                                   " batch(es) not freed yet (mc may still touch it)"};
    }
  }
  check(st->call(what,
                 [&](TransferEngine& e) {
                   return e.unregisterLocalMemory(reinterpret_cast<void*>(addr));
                 }),
        what);
  std::shared_ptr<RegState> keep;  // its memory goes here, with the GIL held
  {
    std::lock_guard lock(st->regs_mu);
    auto it = st->regs.find(addr);
    if (it != st->regs.end()) {
      keep = std::move(it->second);
      st->regs.erase(it);
    }
  }
}

std::string bytes_of(pyb::handle obj, const char* what) {
  if (PyBytes_Check(obj.ptr())) return obj.cast<std::string>();
  if (PyUnicode_Check(obj.ptr())) return obj.cast<std::string>();
  if (PyByteArray_Check(obj.ptr()) || PyMemoryView_Check(obj.ptr())) {
    return pyb::bytes(pyb::reinterpret_borrow<pyb::object>(obj)).cast<std::string>();
  }
  throw StatusError{kInvalidParam,
                    std::string("notification ") + what + ": str or bytes, not " +
                        pyb::str(pyb::type::handle_of(obj).attr("__name__")).cast<std::string>()};
}

int live_engines() {
  return g_live_engines.load();
}

void bind_engine(pyb::module_& m) {
  pyb::enum_<TransferRequest::OpCode>(m, "Opcode",
                                      "What a request does: READ (remote -> local) or WRITE.")
      .value("READ", TransferRequest::READ)
      .value("WRITE", TransferRequest::WRITE)
      .export_values();

  pyb::class_<Registration>(
      m, "Registration",
      "Memory registered with an engine; keeps the object (and its buffer) alive until "
      "unregister() or the engine's close().")
      .def_property_readonly("address", [](const Registration& r) { return r.reg->mem.addr; })
      .def_property_readonly("length", [](const Registration& r) { return r.reg->mem.length; })
      .def_property_readonly("location", [](const Registration& r) { return r.reg->location; })
      .def_property_readonly("readonly", [](const Registration& r) { return r.reg->mem.readonly; })
      .def_property_readonly("memory_type", [](const Registration& r) { return r.reg->mem.type; })
      .def_property_readonly(
          "kind", [](const Registration& r) { return r.reg->mem.kind; },
          "How the memory was taken: buffer, address, cuda_array_interface or data_ptr.")
      .def_property_readonly("obj", [](const Registration& r) { return r.reg->mem.owner; })
      .def_property_readonly("remote_accessible",
                             [](const Registration& r) { return r.reg->remote_accessible; })
      .def("unregister", [](Registration& r) { unregister_memory(r.engine, r.reg); })
      .def("__enter__", [](pyb::object self) { return self; })
      .def(
          "__exit__",
          [](Registration& r, pyb::args) {
            bool registered;
            {
              std::lock_guard lock(r.engine->regs_mu);
              auto it = r.engine->regs.find(r.reg->mem.addr);
              registered = it != r.engine->regs.end() && it->second == r.reg;
            }
            if (registered) unregister_memory(r.engine, r.reg);
          },
          "with engine.register_memory(buf) as reg: ... unregisters it at the end of the block.")
      .def("__len__", [](const Registration& r) { return r.reg->mem.length; })
      .def("__repr__", [](const Registration& r) {
        return "<mc.Registration " + hex(r.reg->mem.addr) + " " +
               std::to_string(r.reg->mem.length) + " B " + r.reg->location +
               (r.reg->mem.readonly ? " read-only" : "") + ">";
      });

  pyb::class_<SegmentBufferInfo>(m, "SegmentBuffer", "A buffer the owner of a segment published.")
      .def_readonly("location", &SegmentBufferInfo::location)
      .def_readonly("address", &SegmentBufferInfo::addr)
      .def_readonly("length", &SegmentBufferInfo::length)
      .def_readonly("path", &SegmentBufferInfo::path)
      .def("__repr__", [](const SegmentBufferInfo& b) {
        return "<mc.SegmentBuffer " + hex(b.addr) + " " + std::to_string(b.length) + " B " +
               b.location + ">";
      });

  pyb::class_<Segment>(m, "Segment", "A segment opened by TransferEngine.open_segment().")
      .def_readonly("id", &Segment::id)
      .def_readonly("name", &Segment::name)
      .def(
          "buffers",
          [](const Segment& s) {
            std::vector<SegmentBufferInfo> bufs;
            check(
                s.engine->call("Segment.buffers",
                               [&](TransferEngine& e) { return e.getSegmentBuffers(s.id, bufs); }),
                "Segment('" + s.name + "').buffers()");
            return bufs;
          },
          "The buffers its owner published (location, address, length, path).")
      .def("close",
           [](const Segment& s) {
             check(
                 s.engine->call("Segment.close",
                                [&](TransferEngine& e) { return e.closeSegment(s.id); }),
                 "Segment('" + s.name + "').close(): tasks to it are unfinished, or it is closed");
           })
      .def("__repr__", [](const Segment& s) {
        return "<mc.Segment " + std::to_string(s.id) + " '" + s.name + "'>";
      });

  pyb::class_<Request>(
      m, "Request",
      "One transfer: Request(opcode, local, segment, remote, length=None, offset=0). `local` is a "
      "Registration (at `offset`; length defaults to the rest of it), or an int address inside "
      "one (length needed); `segment` a Segment or its id; `remote` the remote address.")
      .def(pyb::init([](TransferRequest::OpCode op, pyb::handle local, pyb::handle segment,
                        uint64_t remote, std::optional<size_t> length, size_t offset) {
             Request r{op, 0, 0, 0, remote, nullptr};
             r.segment = pyb::isinstance<Segment>(segment) ? segment.cast<const Segment&>().id
                                                           : segment.cast<SegmentID>();
             if (pyb::isinstance<Registration>(local)) {
               r.reg = local.cast<const Registration&>().reg;
               if (offset > r.reg->mem.length) {
                 throw StatusError{kInvalidParam, "Request: offset " + std::to_string(offset) +
                                                      " is past the registration's end"};
               }
               r.local = r.reg->mem.addr + offset;
               r.length = length.value_or(r.reg->mem.length - offset);
             } else if (PyLong_Check(local.ptr())) {
               if (!length)
                 throw StatusError{kInvalidParam, "Request: an int local address needs a length"};
               r.local = local.cast<uintptr_t>() + offset;
               r.length = *length;
             } else {
               const Memory mem = memory_of(local, std::nullopt);
               r.local = mem.addr + offset;
               r.length = length.value_or(offset < mem.length ? mem.length - offset : 0);
             }
             return r;
           }),
           "opcode"_a, "local"_a, "segment"_a, "remote"_a, "length"_a = pyb::none(), "offset"_a = 0)
      .def_readonly("opcode", &Request::op)
      .def_readonly("local", &Request::local)
      .def_readonly("length", &Request::length)
      .def_readonly("segment", &Request::segment)
      .def_readonly("remote", &Request::remote)
      .def("__repr__", [](const Request& r) {
        return std::string("<mc.Request ") + (r.op == TransferRequest::READ ? "READ " : "WRITE ") +
               hex(r.local) + " -> segment " + std::to_string(r.segment) + " " + hex(r.remote) +
               " " + std::to_string(r.length) + " B>";
      });

  pyb::class_<Engine>(
      m, "TransferEngine",
      "mc's Transfer Engine: TransferEngine(metadata='P2PHANDSHAKE', "
      "local_server_name='127.0.0.1', "
      "*, ip_or_host_name=None, rpc_port=0, config=None). `metadata`: P2PHANDSHAKE, "
      "http://host:port/metadata, etcd://host:2379 (or host:2379), redis://host:6379; `config`: "
      "MC_* knobs for this engine only, checked as mc.config.set checks them.")
      .def(pyb::init<const std::string&, const std::string&, const std::optional<std::string>&,
                     uint16_t, const std::map<std::string, std::string>&>(),
           "metadata"_a = "P2PHANDSHAKE", "local_server_name"_a = "127.0.0.1", pyb::kw_only(),
           "ip_or_host_name"_a = pyb::none(), "rpc_port"_a = 0,
           "config"_a = std::map<std::string, std::string>{})
      .def("close", &Engine::close,
           "Stops the engine: its segment leaves the metadata, its registrations end.")
      .def("__enter__", [](pyb::object self) { return self; })
      .def("__exit__", [](Engine& e, pyb::args) { e.close(); })
      .def_property_readonly(
          "segment_name", [](const Engine& e) { return e.state()->segment_name; },
          "The name peers open this engine's segment by.")
      .def_property_readonly("local_ip_and_port",
                             [](const Engine& e) {
                               return e.state()->call("local_ip_and_port", [](TransferEngine& t) {
                                 return t.getLocalIpAndPort();
                               });
                             })
      .def_property_readonly("rpc_port",
                             [](const Engine& e) {
                               const std::string s = e.state()->call(
                                   "rpc_port",
                                   [](TransferEngine& t) { return t.getLocalIpAndPort(); });
                               return std::stoi(s.substr(s.rfind(':') + 1));
                             })
      .def_property_readonly("transports",
                             [](const Engine& e) {
                               return e.state()->call("transports", [](TransferEngine& t) {
                                 return t.getTransports();
                               });
                             })
      .def(
          "register_memory", &Engine::register_memory,
          "Registers memory without copying it: a buffer (bytes: read-only, usable as a WRITE "
          "source only), "
          "an int address with `length`, or an object with __cuda_array_interface__ or data_ptr(). "
          "`location` defaults to the memory's own (cuda:N, or '*': the NUMA node is detected).",
          "obj"_a, "length"_a = pyb::none(), pyb::kw_only(), "location"_a = pyb::none(),
          "remote_accessible"_a = true)
      .def("unregister_memory", &Engine::unregister_object, "obj"_a,
           "Unregisters a Registration, or what is registered at an address or object.")
      .def("open_segment", &Engine::open_segment, "name"_a)
      .def("allocate_batch", &Engine::allocate_batch, "size"_a)
      .def("transfer", &Engine::transfer,
           "Allocates a batch, submits `requests`, waits (with notify=(name, message): also until "
           "the "
           "target took the notification) and frees it: the task statuses. Raises TransferError "
           "when a "
           "task did not complete, TimeoutError past `timeout` seconds (each wait).",
           "requests"_a, pyb::kw_only(), "notify"_a = pyb::none(), "timeout"_a = pyb::none())
      .def("send_notify", &Engine::send_notify,
           "Sends a notification to a Segment or a segment name and returns once the target took "
           "it.",
           "target"_a, "name"_a, "message"_a)
      .def("get_notifies", &Engine::get_notifies,
           "Takes the notifications received so far, oldest first: Notification(sender, name, "
           "message), "
           "the sender as mc proved it.");

  m.def("live_engines", &live_engines, "How many engines of this process are open.");
}

}  // namespace mc::py
