// SPDX-License-Identifier: Apache-2.0
// The metadata values' JSON codec. Decoding is strict about what it reads:
// every field the encoder writes must be present with its type and range;
// unknown fields are ignored so a newer writer stays readable.
#include "ucp/metadata/descriptors.h"

#include <limits>

#include "ucs/datastruct/json.h"

namespace mc::metadata {

namespace json = ucs::json;
using ucs::Status;

namespace {

std::string join_key(std::string_view prefix, std::string_view kind, std::string_view name) {
  std::string key;
  key.reserve(prefix.size() + kind.size() + name.size() + 2);
  if (!prefix.empty()) {
    key.append(prefix);
    key.push_back('/');
  }
  key.append(kind);
  key.push_back('/');
  key.append(name);
  return key;
}

std::string to_hex(const std::vector<uint8_t>& bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (const uint8_t b : bytes) {
    s.push_back(kHex[b >> 4]);
    s.push_back(kHex[b & 0xf]);
  }
  return s;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Reads fields of one decoded document; the first failure is kept as
// "<what>: field <path>: <problem>" and every later read fails too.
class FieldReader {
 public:
  FieldReader(const char* what, std::string* error) : what_(what), error_(error) {}

  bool ok() const { return ok_; }

  bool fail(const std::string& path, const std::string& why) {
    if (ok_ && error_) *error_ = std::string(what_) + ": field " + path + ": " + why;
    ok_ = false;
    return false;
  }

  // The member `name` of object `obj` (at `path`), or null after a failure.
  const json::Value* member(const json::Value& obj, const std::string& path, const char* name) {
    if (!ok_) return nullptr;
    const json::Value* v = obj.find(name);
    if (v == nullptr) {
      fail(path + name, "missing");
      return nullptr;
    }
    return v;
  }

  bool type(const json::Value& v, const std::string& path, json::Type want) {
    if (v.type() == want) return true;
    return fail(path, std::string("expected ") + json::type_name(want) + ", got " +
                          json::type_name(v.type()));
  }

  bool string(const json::Value& obj, const std::string& path, const char* name, std::string* out,
              bool non_empty = true) {
    const json::Value* v = member(obj, path, name);
    if (v == nullptr || !type(*v, path + name, json::Type::String)) return false;
    if (non_empty && v->as_string()->empty()) return fail(path + name, "empty");
    *out = *v->as_string();
    return true;
  }

  bool uint(const json::Value& obj, const std::string& path, const char* name, uint64_t max,
            uint64_t* out) {
    const json::Value* v = member(obj, path, name);
    if (v == nullptr) return false;
    if (!v->as_uint()) {
      return fail(path + name,
                  std::string("expected an unsigned integer, got ") + json::type_name(v->type()));
    }
    if (*v->as_uint() > max) {
      return fail(path + name,
                  std::to_string(*v->as_uint()) + " is larger than " + std::to_string(max));
    }
    *out = *v->as_uint();
    return true;
  }

  bool hex(const json::Value& obj, const std::string& path, const char* name,
           std::vector<uint8_t>* out) {
    std::string text;
    if (!string(obj, path, name, &text, false)) return false;
    if (text.size() % 2 != 0) return fail(path + name, "odd number of hex digits");
    out->clear();
    out->reserve(text.size() / 2);
    for (size_t i = 0; i < text.size(); i += 2) {
      const int hi = hex_digit(text[i]);
      const int lo = hex_digit(text[i + 1]);
      if (hi < 0 || lo < 0) {
        return fail(path + name,
                    "not a hex digit at position " + std::to_string(hi < 0 ? i : i + 1));
      }
      out->push_back(static_cast<uint8_t>(hi << 4 | lo));
    }
    return true;
  }

  // The array or object member `name`, type-checked.
  const json::Value* container(const json::Value& obj, const std::string& path, const char* name,
                               json::Type want) {
    const json::Value* v = member(obj, path, name);
    if (v == nullptr || !type(*v, path + name, want)) return nullptr;
    return v;
  }

  bool string_list(const json::Value& v, const std::string& path, std::vector<std::string>* out) {
    if (!type(v, path, json::Type::Array)) return false;
    for (size_t i = 0; i < v.items().size(); ++i) {
      const std::string item_path = path + "[" + std::to_string(i) + "]";
      if (!type(v.items()[i], item_path, json::Type::String)) return false;
      out->push_back(*v.items()[i].as_string());
    }
    return true;
  }

 private:
  const char* what_;
  std::string* error_;
  bool ok_ = true;
};

// Parses `text` as an object; BadData with the parser's reason otherwise.
Status parse_object(std::string_view text, const char* what, json::Value* out, std::string* error) {
  std::string why;
  ucs::Result<json::Value> v = json::parse(text, &why);
  if (!v.ok()) {
    if (error) *error = std::string(what) + ": not valid JSON: " + why;
    return Status::BadData;
  }
  if (!v->is_object()) {
    if (error)
      *error = std::string(what) + ": expected an object, got " + json::type_name(v->type());
    return Status::BadData;
  }
  *out = std::move(*v);
  return Status::Ok;
}

bool read_buffer(FieldReader& r, const json::Value& b, const std::string& path, BufferDesc* out) {
  if (!r.type(b, path, json::Type::Object)) return false;
  const std::string p = path + ".";
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  if (!r.string(b, p, "name", &out->name) || !r.uint(b, p, "addr", kMax, &out->addr) ||
      !r.uint(b, p, "length", kMax, &out->length) || !r.hex(b, p, "rkey", &out->rkey)) {
    return false;
  }
  if (out->addr + out->length < out->addr) {
    return r.fail(path, "addr + length wraps around the address space");
  }
  return true;
}

bool read_priority_matrix(FieldReader& r, const json::Value& m, PriorityMatrix* out) {
  for (const json::Member& entry : m.members()) {
    const std::string path = "priority_matrix." + entry.key;
    if (!r.type(entry.value, path, json::Type::Array)) return false;
    if (entry.value.items().size() != 2) {
      return r.fail(path, "expected [preferred devices, secondary devices], got " +
                              std::to_string(entry.value.items().size()) + " lists");
    }
    auto& lists = (*out)[entry.key];
    if (!r.string_list(entry.value.items()[0], path + "[0]", &lists.first) ||
        !r.string_list(entry.value.items()[1], path + "[1]", &lists.second)) {
      return false;
    }
  }
  return true;
}

json::Value string_array(const std::vector<std::string>& items) {
  json::Value a = json::Value::array();
  for (const std::string& s : items) a.push_back(json::Value(s));
  return a;
}

}  // namespace

std::string rpc_meta_key(std::string_view prefix, std::string_view server) {
  return join_key(prefix, "rpc_meta", server);
}

std::string ram_key(std::string_view prefix, std::string_view segment) {
  return join_key(prefix, "ram", segment);
}

std::string nvmeof_key(std::string_view prefix, std::string_view segment) {
  return join_key(prefix, "nvmeof", segment);
}

std::string encode(const RpcMeta& v) {
  json::Value o = json::Value::object();
  o.set("ip_or_host_name", json::Value(v.ip_or_host_name));
  o.set("rpc_port", json::Value(static_cast<uint64_t>(v.rpc_port)));
  return json::write(o);
}

std::string encode(const SegmentDesc& v) {
  json::Value o = json::Value::object();
  o.set("server_name", json::Value(v.server_name));
  o.set("protocol", json::Value(v.protocol));
  json::Value& devices = o.set("devices", json::Value::array());
  for (const DeviceDesc& d : v.devices) {
    json::Value dev = json::Value::object();
    dev.set("name", json::Value(d.name));
    devices.push_back(std::move(dev));
  }
  json::Value& matrix = o.set("priority_matrix", json::Value::object());
  for (const auto& [location, lists] : v.priority_matrix) {
    json::Value pair = json::Value::array();
    pair.push_back(string_array(lists.first));
    pair.push_back(string_array(lists.second));
    matrix.set(location, std::move(pair));
  }
  json::Value& buffers = o.set("buffers", json::Value::array());
  for (const BufferDesc& b : v.buffers) {
    json::Value buf = json::Value::object();
    buf.set("name", json::Value(b.name));
    buf.set("addr", json::Value(b.addr));
    buf.set("length", json::Value(b.length));
    buf.set("rkey", json::Value(to_hex(b.rkey)));
    buffers.push_back(std::move(buf));
  }
  o.set("worker_address", json::Value(to_hex(v.worker_address)));
  o.set("generation", json::Value(v.generation));
  return json::write(o);
}

std::string encode(const FileSegmentDesc& v) {
  json::Value o = json::Value::object();
  o.set("server_name", json::Value(v.server_name));
  o.set("protocol", json::Value(v.protocol));
  json::Value& buffers = o.set("buffers", json::Value::array());
  for (const FileBufferDesc& b : v.buffers) {
    json::Value buf = json::Value::object();
    buf.set("length", json::Value(b.length));
    buf.set("file_path", json::Value(b.file_path));
    json::Value& map = buf.set("local_path_map", json::Value::object());
    for (const auto& [host, path] : b.local_path_map) map.set(host, json::Value(path));
    buffers.push_back(std::move(buf));
  }
  return json::write(o);
}

ucs::Result<RpcMeta> decode_rpc_meta(std::string_view text, std::string* error) {
  json::Value o;
  MC_RETURN_IF_ERROR(parse_object(text, "rpc meta", &o, error));
  FieldReader r("rpc meta", error);
  RpcMeta v;
  uint64_t port = 0;
  if (!r.string(o, "", "ip_or_host_name", &v.ip_or_host_name) ||
      !r.uint(o, "", "rpc_port", 65535, &port)) {
    return Status::BadData;
  }
  if (port == 0) {
    r.fail("rpc_port", "0 is not a port");
    return Status::BadData;
  }
  v.rpc_port = static_cast<uint16_t>(port);
  return v;
}

ucs::Result<SegmentDesc> decode_segment(std::string_view text, std::string* error) {
  json::Value o;
  MC_RETURN_IF_ERROR(parse_object(text, "segment descriptor", &o, error));
  FieldReader r("segment descriptor", error);
  SegmentDesc v;
  if (!r.string(o, "", "server_name", &v.server_name) ||
      !r.string(o, "", "protocol", &v.protocol)) {
    return Status::BadData;
  }
  const json::Value* devices = r.container(o, "", "devices", json::Type::Array);
  if (devices == nullptr) return Status::BadData;
  for (size_t i = 0; i < devices->items().size(); ++i) {
    const std::string path = "devices[" + std::to_string(i) + "]";
    DeviceDesc d;
    if (!r.type(devices->items()[i], path, json::Type::Object) ||
        !r.string(devices->items()[i], path + ".", "name", &d.name)) {
      return Status::BadData;
    }
    v.devices.push_back(std::move(d));
  }
  const json::Value* matrix = r.container(o, "", "priority_matrix", json::Type::Object);
  if (matrix == nullptr || !read_priority_matrix(r, *matrix, &v.priority_matrix)) {
    return Status::BadData;
  }
  const json::Value* buffers = r.container(o, "", "buffers", json::Type::Array);
  if (buffers == nullptr) return Status::BadData;
  for (size_t i = 0; i < buffers->items().size(); ++i) {
    BufferDesc b;
    if (!read_buffer(r, buffers->items()[i], "buffers[" + std::to_string(i) + "]", &b)) {
      return Status::BadData;
    }
    v.buffers.push_back(std::move(b));
  }
  if (!r.hex(o, "", "worker_address", &v.worker_address) ||
      !r.uint(o, "", "generation", std::numeric_limits<uint64_t>::max(), &v.generation)) {
    return Status::BadData;
  }
  return v;
}

ucs::Result<FileSegmentDesc> decode_file_segment(std::string_view text, std::string* error) {
  json::Value o;
  MC_RETURN_IF_ERROR(parse_object(text, "file segment descriptor", &o, error));
  FieldReader r("file segment descriptor", error);
  FileSegmentDesc v;
  if (!r.string(o, "", "server_name", &v.server_name) ||
      !r.string(o, "", "protocol", &v.protocol)) {
    return Status::BadData;
  }
  const json::Value* buffers = r.container(o, "", "buffers", json::Type::Array);
  if (buffers == nullptr) return Status::BadData;
  for (size_t i = 0; i < buffers->items().size(); ++i) {
    const std::string path = "buffers[" + std::to_string(i) + "]";
    const json::Value& b = buffers->items()[i];
    FileBufferDesc f;
    if (!r.type(b, path, json::Type::Object) ||
        !r.uint(b, path + ".", "length", std::numeric_limits<uint64_t>::max(), &f.length) ||
        !r.string(b, path + ".", "file_path", &f.file_path)) {
      return Status::BadData;
    }
    const json::Value* map = r.container(b, path + ".", "local_path_map", json::Type::Object);
    if (map == nullptr) return Status::BadData;
    for (const json::Member& m : map->members()) {
      if (!r.type(m.value, path + ".local_path_map." + m.key, json::Type::String)) {
        return Status::BadData;
      }
      f.local_path_map[m.key] = *m.value.as_string();
    }
    v.buffers.push_back(std::move(f));
  }
  return v;
}

}  // namespace mc::metadata
