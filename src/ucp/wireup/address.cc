// SPDX-License-Identifier: Apache-2.0
// Worker address codec.
//
// Wire format, little-endian:
//   u32 magic 0x4157434d ("MCWA") | u8 version | u8 reserved (0) |
//   u16 iface count | u32 body length (bytes after this field) |
//   u64 uuid | u64 network identity | str hostname |
//   count x { u16 entry length (bytes after this field) |
//             str component | str md | str tl | str device | u8 device type |
//             blob device address | blob iface address |
//             u64 cap | f64 latency | f64 bandwidth | f64 overhead |
//             i32 priority | u32 memory types }
// where str is u16 length + bytes, blob is u32 length + bytes, f64 is the
// IEEE-754 bit pattern as u64.
#include "ucp/wireup/address.h"

#include <bit>
#include <cmath>

#include "ucs/datastruct/wire.h"

namespace mc::ucp::wireup {

using ucs::Status;

namespace {

constexpr uint32_t kMagic = 0x4157434d;
constexpr size_t kHeaderSize = 4 + 1 + 1 + 2 + 4;

void put_f64(ucs::WireWriter& w, double v) {
  w.u64(std::bit_cast<uint64_t>(v));
}
double get_f64(ucs::WireReader& r) {
  return std::bit_cast<double>(r.u64());
}

std::vector<uint8_t> pack_entry(const AddressEntry& e) {
  std::vector<uint8_t> out;
  ucs::WireWriter w(&out);
  w.str(e.component);
  w.str(e.md_name);
  w.str(e.tl_name);
  w.str(e.dev_name);
  w.u8(static_cast<uint8_t>(e.dev_type));
  w.blob(e.device_addr);
  w.blob(e.iface_addr);
  w.u64(e.summary.cap);
  put_f64(w, e.summary.latency);
  put_f64(w, e.summary.bandwidth);
  put_f64(w, e.summary.overhead);
  w.u32(static_cast<uint32_t>(e.summary.priority));
  w.u32(e.summary.access_mem_types);
  return out;
}

Status fail(std::string* why, std::string text) {
  if (why) *why = std::move(text);
  return Status::InvalidParam;
}

bool valid_number(double v) {
  return std::isfinite(v) && v >= 0;
}

Status unpack_entry(std::span<const uint8_t> bytes, AddressEntry* e, std::string* why) {
  ucs::WireReader r(bytes);
  e->component = r.str();
  e->md_name = r.str();
  e->tl_name = r.str();
  e->dev_name = r.str();
  const uint8_t dev_type = r.u8();
  auto dev = r.blob();
  e->device_addr.assign(dev.begin(), dev.end());
  auto iface = r.blob();
  e->iface_addr.assign(iface.begin(), iface.end());
  e->summary.cap = r.u64();
  e->summary.latency = get_f64(r);
  e->summary.bandwidth = get_f64(r);
  e->summary.overhead = get_f64(r);
  e->summary.priority = static_cast<int32_t>(r.u32());
  e->summary.access_mem_types = r.u32();
  if (!r.at_end()) return fail(why, "iface entry is truncated or has trailing bytes");
  if (e->component.empty() || e->md_name.empty() || e->tl_name.empty() || e->dev_name.empty()) {
    return fail(why, "iface entry has an empty name");
  }
  if (dev_type > static_cast<uint8_t>(uct::DeviceType::Storage)) {
    return fail(why, "iface entry has unknown device type " + std::to_string(dev_type));
  }
  e->dev_type = static_cast<uct::DeviceType>(dev_type);
  if (!valid_number(e->summary.latency) || !valid_number(e->summary.bandwidth) ||
      !valid_number(e->summary.overhead)) {
    return fail(why, "iface entry " + e->tl_name + "/" + e->dev_name +
                         " has a negative or non-finite performance figure");
  }
  return Status::Ok;
}

}  // namespace

std::vector<uint8_t> address_pack(const WorkerAddress& address) {
  std::vector<uint8_t> body;
  ucs::WireWriter b(&body);
  b.u64(address.uuid);
  b.u64(address.net_identity);
  b.str(address.hostname);
  for (const AddressEntry& e : address.ifaces) {
    const std::vector<uint8_t> entry = pack_entry(e);
    b.u16(static_cast<uint16_t>(entry.size()));
    b.bytes(entry.data(), entry.size());
  }
  std::vector<uint8_t> out;
  ucs::WireWriter w(&out);
  w.u32(kMagic);
  w.u8(kAddressVersion);
  w.u8(0);
  w.u16(static_cast<uint16_t>(address.ifaces.size()));
  w.u32(static_cast<uint32_t>(body.size()));
  w.bytes(body.data(), body.size());
  return out;
}

ucs::Result<WorkerAddress> address_unpack(std::span<const uint8_t> packed, std::string* why) {
  if (packed.size() < kHeaderSize) {
    return fail(why, "address of " + std::to_string(packed.size()) + " bytes is too short");
  }
  ucs::WireReader r(packed);
  const uint32_t magic = r.u32();
  const uint8_t version = r.u8();
  (void)r.u8();
  const uint16_t count = r.u16();
  const uint32_t body_len = r.u32();
  if (magic != kMagic) return fail(why, "not a worker address (bad magic)");
  if (version != kAddressVersion) {
    return fail(why, "address version " + std::to_string(version) +
                         " is not supported (this "
                         "build reads version " +
                         std::to_string(kAddressVersion) + ")");
  }
  if (body_len != r.remaining()) {
    return fail(why, "address body length " + std::to_string(body_len) + " does not match the " +
                         std::to_string(r.remaining()) + " bytes present");
  }
  if (count > kMaxAddressIfaces) {
    return fail(why, "address lists " + std::to_string(count) + " ifaces (at most " +
                         std::to_string(kMaxAddressIfaces) + ")");
  }
  WorkerAddress address;
  address.uuid = r.u64();
  address.net_identity = r.u64();
  address.hostname = r.str();
  for (uint16_t i = 0; i < count; ++i) {
    const uint16_t len = r.u16();
    std::span<const uint8_t> bytes = r.bytes(len);
    if (!r.ok()) return fail(why, "address is truncated in iface entry " + std::to_string(i));
    AddressEntry e;
    MC_RETURN_IF_ERROR(unpack_entry(bytes, &e, why));
    address.ifaces.push_back(std::move(e));
  }
  if (!r.at_end()) return fail(why, "address is truncated or has trailing bytes");
  return address;
}

}  // namespace mc::ucp::wireup
