// SPDX-License-Identifier: Apache-2.0
// Topology discovery from sysfs, PCIe distances and the NIC priority matrix.
#include "ucs/topo/topo.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <optional>
#include <sstream>

#include "ucs/datastruct/json.h"
#include "ucs/log/log.h"

namespace mc::ucs {

namespace {

namespace fs = std::filesystem;

// Linux's NR_CPUS tops out at 8192; anything far beyond is a corrupt list,
// and expanding "0-2000000000" would exhaust memory.
constexpr int kMaxCpu = 1 << 16;
constexpr unsigned kNvidiaVendor = 0x10de;
constexpr unsigned kClassVga = 0x0300;
constexpr unsigned kClass3d = 0x0302;

// Whole-file read with surrounding blanks (the kernel's trailing '\n') trimmed.
std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return std::string(config::trim(text.str()));
}

// Names in `dir`, sorted; empty when it cannot be read.
std::vector<std::string> list_dir(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool parse_int(std::string_view s, int* out) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

bool is_hex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c)) != 0;
  });
}

// "0000:04:00.0": domain (4 or more hex digits, 5 behind Intel VMD), bus,
// device, function.
bool is_pci_addr(std::string_view s) {
  const size_t colon = s.find(':');
  if (colon == std::string_view::npos || colon < 4 || s.size() != colon + 8) return false;
  return is_hex(s.substr(0, colon)) && is_hex(s.substr(colon + 1, 2)) && s[colon + 3] == ':' &&
         is_hex(s.substr(colon + 4, 2)) && s[colon + 6] == '.' && is_hex(s.substr(colon + 7, 1));
}

// "pci0000:00": a host bridge (root complex), domain and root bus.
bool is_host_bridge(std::string_view s) {
  if (s.substr(0, 3) != "pci") return false;
  s.remove_prefix(3);
  return s.size() >= 7 && s[s.size() - 3] == ':' && is_hex(s.substr(0, s.size() - 3)) &&
         is_hex(s.substr(s.size() - 2));
}

// The PCI part of a resolved sysfs path: its host bridge, then each PCI
// function from the root port down to the device. Components after the last
// function (virtio2, net/eth0, ...) are not PCI and end the chain.
struct PciPath {
  std::string host;
  std::vector<std::string> chain;
};

PciPath parse_pci_path(std::string_view path) {
  PciPath p;
  for (const std::string& part : config::split_list(path, '/')) {
    if (p.host.empty()) {
      if (is_host_bridge(part)) p.host = part;
    } else if (is_pci_addr(part)) {
      p.chain.push_back(part);
    } else {
      break;
    }
  }
  if (p.chain.empty()) p.host.clear();
  return p;
}

// `resolved` relative to the sysfs root, or whole when it lies outside.
std::string relative_to_root(const fs::path& resolved, const std::string& canonical_root) {
  const fs::path rel = resolved.lexically_relative(canonical_root);
  return rel.empty() || *rel.begin() == ".." ? resolved.string() : rel.string();
}

// "cpu:N" or "cuda:N" with N in canonical decimal, so it matches the keys
// discovery makes.
bool is_location(std::string_view loc) {
  for (std::string_view prefix : {"cpu:", "cuda:"}) {
    if (loc.substr(0, prefix.size()) != prefix) continue;
    const std::string_view n = loc.substr(prefix.size());
    int value = 0;
    return parse_int(n, &value) && value >= 0 && (n.size() == 1 || n[0] != '0');
  }
  return false;
}

Status parse_nic_list(std::string_view text, const std::string& loc, std::vector<std::string>* out,
                      std::string* error) {
  for (const std::string& name : config::split_list(text, ',')) {
    const bool bad = name.empty() || std::any_of(name.begin(), name.end(), [](char c) {
                       return std::isspace(static_cast<unsigned char>(c)) || c == '|' || c == '=';
                     });
    if (bad) {
      if (error) *error = "'" + name + "' in the entry of " + loc + " is not a NIC name";
      return Status::InvalidParam;
    }
    out->push_back(name);
  }
  return Status::Ok;
}

void append_list(std::string* out, const std::vector<std::string>& names, const char* sep) {
  for (size_t i = 0; i < names.size(); ++i) *out += (i ? sep : "") + names[i];
}

void append_json_list(std::string* out, const std::vector<std::string>& names) {
  *out += '[';
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) *out += ", ";
    json::write_string(names[i], out);
  }
  *out += ']';
}

config::Parser<PriorityMatrix> priority_matrix_parser() {
  config::Parser<PriorityMatrix> p;
  p.syntax =
      "entries LOCATION=NIC[,NIC...][|NIC[,NIC...]] separated by ';', LOCATION being cpu:N or "
      "cuda:N, preferred NICs before '|', secondary after; empty for none";
  p.parse = [](std::string_view text, PriorityMatrix* out) {
    std::string why;
    Result<PriorityMatrix> matrix = parse_priority_matrix(text, &why);
    if (!matrix.ok()) {
      // The table reports the value and the syntax; this says which part is wrong.
      MC_LOG(error) << "topology: bad priority matrix '" << text << "': " << why;
      return matrix.status();
    }
    *out = std::move(matrix).value();
    return Status::Ok;
  };
  p.format = format_priority_matrix;
  return p;
}

}  // namespace

const char* pci_distance_name(PciDistance distance) {
  switch (distance) {
    case PciDistance::SameDevice: return "same-device";
    case PciDistance::SamePcieSwitch: return "same-pcie-switch";
    case PciDistance::SameRootComplex: return "same-root-complex";
    case PciDistance::SameNuma: return "same-numa";
    case PciDistance::CrossSocket: return "cross-socket";
    case PciDistance::Unknown: break;
  }
  return "unknown";
}

const char* device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::Rdma: return "rdma";
    case DeviceKind::Net: return "net";
    case DeviceKind::Gpu: break;
  }
  return "gpu";
}

Result<std::vector<int>> parse_cpu_list(std::string_view text) {
  std::vector<int> cpus;
  for (const std::string& item : config::split_list(text, ',')) {
    const size_t dash = item.find('-');
    const std::string_view sv(item);
    int first = 0;
    if (!parse_int(sv.substr(0, dash), &first) || first < 0 || first > kMaxCpu) {
      return Status::InvalidParam;
    }
    int last = first;
    if (dash != std::string::npos &&
        (!parse_int(sv.substr(dash + 1), &last) || last < first || last > kMaxCpu)) {
      return Status::InvalidParam;
    }
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

Result<PriorityMatrix> parse_priority_matrix(std::string_view text, std::string* error) {
  PriorityMatrix matrix;
  auto fail = [error](std::string why) {
    if (error) *error = std::move(why);
    return Status::InvalidParam;
  };
  for (const std::string& item : config::split_list(text, ';')) {
    if (item.empty()) continue;  // a trailing ';'
    const size_t eq = item.find('=');
    if (eq == std::string::npos) return fail("entry '" + item + "' has no '='");
    const std::string loc(config::trim(std::string_view(item).substr(0, eq)));
    if (!is_location(loc)) return fail("'" + loc + "' is not a location (cpu:N or cuda:N)");
    const std::string_view lists = std::string_view(item).substr(eq + 1);
    const size_t bar = lists.find('|');
    PriorityEntry entry;
    MC_RETURN_IF_ERROR(parse_nic_list(lists.substr(0, bar), loc, &entry.preferred, error));
    if (bar != std::string_view::npos) {
      MC_RETURN_IF_ERROR(parse_nic_list(lists.substr(bar + 1), loc, &entry.secondary, error));
    }
    if (entry.preferred.empty() && entry.secondary.empty()) return fail("no NIC given for " + loc);
    std::vector<std::string> all = entry.preferred;
    all.insert(all.end(), entry.secondary.begin(), entry.secondary.end());
    std::sort(all.begin(), all.end());
    if (auto dup = std::adjacent_find(all.begin(), all.end()); dup != all.end()) {
      return fail("'" + *dup + "' is listed twice for " + loc);
    }
    if (!matrix.emplace(loc, std::move(entry)).second) return fail(loc + " is given twice");
  }
  return matrix;
}

std::string format_priority_matrix(const PriorityMatrix& matrix) {
  std::string out;
  for (const auto& [loc, entry] : matrix) {
    if (!out.empty()) out += ';';
    out += loc + "=";
    append_list(&out, entry.preferred, ",");
    if (!entry.secondary.empty()) {
      out += '|';
      append_list(&out, entry.secondary, ",");
    }
  }
  return out;
}

std::string priority_matrix_to_json(const PriorityMatrix& matrix) {
  std::string out = "{";
  for (const auto& [loc, entry] : matrix) {
    if (out.size() > 1) out += ", ";
    json::write_string(loc, &out);
    out += ": [";
    append_json_list(&out, entry.preferred);
    out += ", ";
    append_json_list(&out, entry.secondary);
    out += ']';
  }
  return out + "}";
}

const config::Table& topo_config_table() {
  static const config::Table table(
      "topology", "TOPO_",
      {config::field("SYSFS_ROOT", "/sys",
                     "Root of the sysfs tree that topology is read from (a fixture tree in "
                     "tests).",
                     &TopoConfig::sysfs_root, config::string_parser()),
       config::field("PRIORITY_MATRIX", "",
                     "NIC priority per memory location, replacing the discovered entry of each "
                     "location given, e.g. 'cpu:0=mlx5_0|mlx5_1;cuda:0=mlx5_1'. Every NIC named "
                     "must exist.",
                     &TopoConfig::priority_matrix, priority_matrix_parser())});
  return table;
}

Result<Topology> Topology::discover(const std::string& sysfs_root,
                                    PriorityMatrix priority_override) {
  std::error_code ec;
  if (!fs::is_directory(sysfs_root, ec)) {
    MC_LOG(error) << "topology: sysfs root '" << sysfs_root << "' is not a directory"
                  << (ec ? ": " + ec.message() : std::string());
    return Status::InvalidParam;
  }
  Topology topo;
  topo.root_ = sysfs_root;
  const fs::path canonical = fs::canonical(sysfs_root, ec);
  topo.canonical_root_ = ec ? sysfs_root : canonical.string();
  // NUMA nodes first: a device's node may be inferred from its local CPUs.
  topo.read_numa_nodes();
  topo.read_rdma_devices();
  topo.read_net_devices();
  topo.read_gpus();
  if (!topo.rdma_.empty()) {
    topo.nics_ = topo.rdma_;
  } else {
    for (const TopoDevice& dev : topo.net_) {
      if (!dev.pci_addr.empty()) topo.nics_.push_back(dev);
    }
  }
  topo.override_ = std::move(priority_override);
  MC_RETURN_IF_ERROR(topo.check_override());
  MC_LOG(debug) << "topology from " << sysfs_root << ": " << topo.numa_nodes_.size()
                << " numa nodes, " << topo.rdma_.size() << " rdma devices, " << topo.net_.size()
                << " netdevs, " << topo.gpus_.size() << " gpus";
  return topo;
}

Result<Topology> Topology::discover(const TopoConfig& config) {
  return discover(config.sysfs_root, config.priority_matrix);
}

Result<Topology> Topology::discover(const config::Sources& sources) {
  MC_ASSIGN_OR_RETURN(TopoConfig cfg, config::read_table<TopoConfig>(topo_config_table(), sources));
  return discover(cfg);
}

Result<Topology> Topology::discover() {
  std::string error;
  Result<config::Sources> sources = config::Sources::from_process(&error);
  if (!sources.ok()) {
    MC_LOG(error) << "topology: " << error;
    return sources.status();
  }
  return discover(*sources);
}

void Topology::read_numa_nodes() {
  const fs::path dir = fs::path(root_) / "devices/system/node";
  for (const std::string& name : list_dir(dir)) {
    int id = 0;
    if (name.rfind("node", 0) != 0 || !parse_int(std::string_view(name).substr(4), &id)) continue;
    NumaNode node{id, {}};
    const std::optional<std::string> text = read_text(dir / name / "cpulist");
    Result<std::vector<int>> cpus = parse_cpu_list(text.value_or(""));
    if (!text || !cpus.ok()) {
      MC_LOG(warn) << "topology: cannot read a cpu list from " << (dir / name / "cpulist").string()
                   << (text ? " ('" + *text + "')" : std::string()) << "; node " << id
                   << " gets no cpus";
    } else {
      node.cpus = std::move(cpus).value();
    }
    numa_nodes_.push_back(std::move(node));
  }
  std::sort(numa_nodes_.begin(), numa_nodes_.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
  if (!numa_nodes_.empty()) return;
  // A kernel without NUMA support has no node directories: one node holds all.
  const fs::path online = fs::path(root_) / "devices/system/cpu/online";
  Result<std::vector<int>> cpus = parse_cpu_list(read_text(online).value_or(""));
  numa_nodes_.push_back(NumaNode{0, cpus.value_or({})});
}

int Topology::device_numa_node(const std::string& pci_dir) const {
  int node = -1;
  const std::optional<std::string> text = read_text(fs::path(pci_dir) / "numa_node");
  if (text && parse_int(*text, &node) && node >= 0) return node;
  // Firmware without proximity data reports -1; the device's local CPUs still
  // name the node when they all lie on one (always so on a one-node machine).
  const std::optional<std::string> local = read_text(fs::path(pci_dir) / "local_cpulist");
  const Result<std::vector<int>> cpus = parse_cpu_list(local.value_or(""));
  if (!cpus.ok() || cpus->empty()) return -1;
  const int first = numa_node_of_cpu(cpus->front());
  for (int cpu : *cpus) {
    if (numa_node_of_cpu(cpu) != first) return -1;
  }
  return first;
}

TopoDevice Topology::read_device(const std::string& class_dir, const std::string& name,
                                 DeviceKind kind) const {
  TopoDevice dev;
  dev.name = name;
  dev.kind = kind;
  std::error_code ec;
  const fs::path resolved = fs::canonical(fs::path(root_) / class_dir / name / "device", ec);
  if (ec) {
    dev.is_virtual = true;
    return dev;
  }
  dev.sysfs_path = relative_to_root(resolved, canonical_root_);
  const PciPath pci = parse_pci_path(dev.sysfs_path);
  if (pci.chain.empty()) return dev;
  dev.pci_addr = pci.chain.back();
  // The PCI function's own directory holds numa_node (a virtio child has none).
  fs::path dir = resolved;
  while (dir.filename() != dev.pci_addr && dir.has_relative_path()) dir = dir.parent_path();
  dev.numa_node = device_numa_node(dir.string());
  return dev;
}

void Topology::read_rdma_devices() {
  const fs::path dir = fs::path(root_) / "class/infiniband";
  for (const std::string& name : list_dir(dir)) {
    std::error_code ec;
    if (!fs::is_directory(dir / name, ec)) continue;
    TopoDevice dev = read_device("class/infiniband", name, DeviceKind::Rdma);
    // A PCI function lists its netdevs; soft RDMA (rxe, siw) names its own.
    const std::vector<std::string> nets = list_dir(dir / name / "device/net");
    if (!nets.empty()) {
      dev.netdev = nets.front();
    } else if (std::optional<std::string> parent = read_text(dir / name / "parent")) {
      dev.netdev = *parent;
    }
    rdma_.push_back(std::move(dev));
  }
}

void Topology::read_net_devices() {
  const fs::path dir = fs::path(root_) / "class/net";
  for (const std::string& name : list_dir(dir)) {
    std::error_code ec;
    // Skips files such as bonding_masters.
    if (name == "lo" || !fs::is_directory(dir / name, ec)) continue;
    net_.push_back(read_device("class/net", name, DeviceKind::Net));
  }
}

void Topology::read_gpus() {
  const fs::path dir = fs::path(root_) / "bus/pci/devices";
  // list_dir sorts by name, which is PCI address order: the order CUDA uses
  // with CUDA_DEVICE_ORDER=PCI_BUS_ID.
  for (const std::string& addr : list_dir(dir)) {
    const std::optional<std::string> vendor = read_text(dir / addr / "vendor");
    const std::optional<std::string> cls = read_text(dir / addr / "class");
    if (!vendor || !cls) continue;
    const unsigned long vendor_id = std::strtoul(vendor->c_str(), nullptr, 16);
    const unsigned long class_id = std::strtoul(cls->c_str(), nullptr, 16) >> 8;
    if (vendor_id != kNvidiaVendor || (class_id != kClassVga && class_id != kClass3d)) continue;
    TopoDevice gpu;
    gpu.name = "cuda:" + std::to_string(gpus_.size());
    gpu.kind = DeviceKind::Gpu;
    gpu.pci_addr = addr;
    std::error_code ec;
    const fs::path resolved = fs::canonical(dir / addr, ec);
    if (!ec) gpu.sysfs_path = relative_to_root(resolved, canonical_root_);
    gpu.numa_node = device_numa_node((dir / addr).string());
    gpus_.push_back(std::move(gpu));
  }
}

Status Topology::check_override() const {
  for (const auto& [loc, entry] : override_) {
    for (const auto* list : {&entry.preferred, &entry.secondary}) {
      for (const std::string& name : *list) {
        const TopoDevice* dev = find(name);
        if (dev && dev->kind != DeviceKind::Gpu) continue;
        MC_LOG(error) << "topology: the priority matrix override names '" << name << "' for " << loc
                      << ", which is not an rdma device or netdev under " << root_;
        return Status::InvalidParam;
      }
    }
  }
  return Status::Ok;
}

const TopoDevice* Topology::find(std::string_view name) const {
  for (const auto* list : {&rdma_, &net_, &gpus_}) {
    for (const TopoDevice& dev : *list) {
      if (dev.name == name) return &dev;
    }
  }
  return nullptr;
}

std::vector<std::string> Topology::with_netdevs(const std::vector<std::string>& names) const {
  std::vector<std::string> out = names;
  for (const std::string& name : names) {
    const TopoDevice* dev = find(name);
    if (dev && !dev->netdev.empty() && std::find(out.begin(), out.end(), dev->netdev) == out.end()) {
      out.push_back(dev->netdev);
    }
  }
  return out;
}

PciDistance Topology::distance(const TopoDevice& a, const TopoDevice& b) {
  const PciPath pa = parse_pci_path(a.sysfs_path);
  const PciPath pb = parse_pci_path(b.sysfs_path);
  if (!pa.host.empty() && pa.host == pb.host) {
    size_t common = 0;
    while (common < pa.chain.size() && common < pb.chain.size() &&
           pa.chain[common] == pb.chain[common]) {
      ++common;
    }
    // Same bridges above, same bus:device below: functions of one device.
    const std::string& la = pa.chain.back();
    const std::string& lb = pb.chain.back();
    if (pa.chain.size() == pb.chain.size() && common + 1 >= pa.chain.size() &&
        la.substr(0, la.size() - 2) == lb.substr(0, lb.size() - 2)) {
      return PciDistance::SameDevice;
    }
    // A root port has one link, so two devices that share it share the
    // switch below it too: any common function above both is a switch path.
    return common > 0 ? PciDistance::SamePcieSwitch : PciDistance::SameRootComplex;
  }
  if (a.numa_node < 0 || b.numa_node < 0) return PciDistance::Unknown;
  return a.numa_node == b.numa_node ? PciDistance::SameNuma : PciDistance::CrossSocket;
}

int Topology::numa_node_of_cpu(int cpu) const {
  for (const NumaNode& node : numa_nodes_) {
    if (std::binary_search(node.cpus.begin(), node.cpus.end(), cpu)) return node.id;
  }
  return -1;
}

PriorityMatrix Topology::priority_matrix() const {
  PriorityMatrix matrix;
  for (const NumaNode& node : numa_nodes_) {
    PriorityEntry& entry = matrix["cpu:" + std::to_string(node.id)];
    for (const TopoDevice& nic : nics_) {
      (nic.numa_node == node.id ? entry.preferred : entry.secondary).push_back(nic.name);
    }
  }
  for (const TopoDevice& gpu : gpus_) {
    PriorityEntry& entry = matrix[gpu.name];
    PciDistance best = PciDistance::Unknown;
    for (const TopoDevice& nic : nics_) best = std::min(best, distance(gpu, nic));
    for (const TopoDevice& nic : nics_) {
      (distance(gpu, nic) == best ? entry.preferred : entry.secondary).push_back(nic.name);
    }
  }
  for (const auto& [loc, entry] : override_) matrix[loc] = entry;
  return matrix;
}

void Topology::print(std::ostream& os) const {
  os << "topology from " << root_ << "\n";
  for (const NumaNode& node : numa_nodes_) {
    os << "  numa node " << node.id << ": cpus " << format_cpu_list(node.cpus) << "\n";
  }
  for (const auto* list : {&rdma_, &net_, &gpus_}) {
    for (const TopoDevice& dev : *list) {
      os << "  " << std::left << std::setw(5) << device_kind_name(dev.kind) << std::setw(10)
         << dev.name;
      if (dev.is_virtual) {
        os << " virtual";
      } else {
        os << " pci " << (dev.pci_addr.empty() ? "-" : dev.pci_addr) << "  numa " << dev.numa_node;
      }
      if (!dev.netdev.empty()) os << "  netdev " << dev.netdev;
      os << "\n";
    }
  }
  for (const TopoDevice& gpu : gpus_) {
    os << "  pcie distance " << gpu.name << ":";
    for (size_t i = 0; i < nics_.size(); ++i) {
      os << (i ? ", " : " ") << nics_[i].name << " " << pci_distance_name(distance(gpu, nics_[i]));
    }
    os << "\n";
  }
  for (const auto& [loc, entry] : priority_matrix()) {
    std::string preferred, secondary;
    append_list(&preferred, entry.preferred, ",");
    append_list(&secondary, entry.secondary, ",");
    os << "  nic priority " << std::setw(8) << loc << " preferred "
       << (preferred.empty() ? "-" : preferred) << "  secondary "
       << (secondary.empty() ? "-" : secondary) << (override_.count(loc) ? "  (override)" : "")
       << "\n";
  }
}

}  // namespace mc::ucs
