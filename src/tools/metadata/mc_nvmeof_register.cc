// SPDX-License-Identifier: Apache-2.0
// mc_nvmeof_register: registers file (nvmeof) segments of the Transfer
// Engine in the metadata store and mounts them on hosts, as the Transfer
// Engine document's register.py and mount.py do: writes and edits
// <prefix>/nvmeof/<segment> = {"server_name", "protocol": "nvmeof",
// "buffers": [{"length", "file_path", "local_path_map": {host: path}}]}.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "tools/tool_version.h"
#include "ucp/metadata/config.h"
#include "ucp/metadata/descriptors.h"
#include "ucp/metadata/store.h"
#include "ucs/config/registry.h"

namespace {

namespace md = mc::metadata;
using mc::ucs::Result;
using mc::ucs::Status;

constexpr const char* kProg = "mc_nvmeof_register";

void usage(std::ostream& os) {
  os << "Usage: mc_nvmeof_register register   --metadata CONN --segment NAME --server SERVER [--force] "
        "FILE...\n"
        "   or: mc_nvmeof_register mount      --metadata CONN --segment NAME --host HOST --buffer I "
        "--path PATH\n"
        "   or: mc_nvmeof_register unmount    --metadata CONN --segment NAME --host HOST --buffer I\n"
        "   or: mc_nvmeof_register show       --metadata CONN --segment NAME [--json]\n"
        "   or: mc_nvmeof_register unregister --metadata CONN --segment NAME\n"
        "   or: mc_nvmeof_register -h | --help | --version\n"
        "\n"
        "Registers and mounts file (nvmeof) segments of the Transfer Engine.\n"
        "  A file segment is a list of files (NVMe or NVMe-oF namespaces, block devices or\n"
        "  regular files), laid end to end in one offset space: file 0 at [0, len0), file 1\n"
        "  at [len0, len0 + len1), ... It lives in the metadata store at\n"
        "  <prefix>/nvmeof/NAME (prefix MC_METADATA_KEY_PREFIX, default \"mooncake\").\n"
        "\n"
        "  register    writes the segment: SERVER is the host the FILEs are on (their\n"
        "              file_path is used by an engine whose local_server_name is SERVER);\n"
        "              each FILE's length is its size (fstat, BLKGETSIZE64 for a block\n"
        "              device); FILE is stored as an absolute path. Refuses an existing\n"
        "              segment unless --force.\n"
        "  mount       records that HOST reaches buffer I at PATH (local_path_map[HOST]):\n"
        "              an engine opening the segment uses the entry of its local_server_name,\n"
        "              then of its host part (without :port). PATH is not checked here.\n"
        "  unmount     removes local_path_map[HOST] of buffer I.\n"
        "  show        prints the segment (--json: the stored value).\n"
        "  unregister  removes the segment.\n"
        "\n"
        "  CONN: http://host:port/metadata, etcd://host:2379, host:2379 or\n"
        "  redis://[:password@]host:6379[/db]. P2PHANDSHAKE has no store and is refused.\n"
        "  The store has no key listing: segments are found by name.\n"
        "\n"
        "Exit status:\n"
        "  0 done; 1 the store or a file failed (the reason is printed); 2 bad arguments.\n";
}

struct Args {
  std::string command;
  std::string metadata;
  std::string segment;
  std::string server;
  std::string host;
  std::string path;
  long buffer = -1;
  bool force = false;
  bool json = false;
  std::vector<std::string> files;
};

int bad(const std::string& why) {
  std::cerr << kProg << ": " << why << " (see " << kProg << " -h)\n";
  return 2;
}

int fail(const std::string& why) {
  std::cerr << kProg << ": " << why << "\n";
  return 1;
}

// The size of a regular file or block device.
Result<uint64_t> file_length(const std::string& path, std::string* why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = "cannot open " + path + ": " + std::strerror(errno);
    return Status::IoError;
  }
  struct stat st {};
  uint64_t size = 0;
  Status s = Status::Ok;
  if (::fstat(fd, &st) != 0) {
    *why = "cannot stat " + path + ": " + std::strerror(errno);
    s = Status::IoError;
  } else if (S_ISBLK(st.st_mode)) {
    if (::ioctl(fd, BLKGETSIZE64, &size) != 0) {
      *why = "cannot read the size of block device " + path + ": " + std::strerror(errno);
      s = Status::IoError;
    }
  } else if (S_ISREG(st.st_mode)) {
    size = static_cast<uint64_t>(st.st_size);
  } else {
    *why = path + " is neither a regular file nor a block device";
    s = Status::InvalidParam;
  }
  ::close(fd);
  if (s == Status::Ok && size == 0) {
    *why = path + " is empty: a segment file needs its length";
    s = Status::InvalidParam;
  }
  if (s != Status::Ok) return s;
  return size;
}

std::string quote(const std::string& s) {
  return "'" + s + "'";
}

void print_segment(const std::string& key, const md::FileSegmentDesc& d) {
  std::cout << key << "\n  server_name: " << d.server_name << "\n  protocol: " << d.protocol
            << "\n";
  uint64_t offset = 0;
  for (size_t i = 0; i < d.buffers.size(); ++i) {
    const md::FileBufferDesc& b = d.buffers[i];
    std::cout << "  buffer " << i << ": " << b.file_path << ", " << b.length << " bytes, offsets ["
              << offset << ", " << offset + b.length << ")\n";
    for (const auto& [host, path] : b.local_path_map) {
      std::cout << "    mounted on " << host << " at " << path << "\n";
    }
    offset += b.length;
  }
}

int run(const Args& a) {
  mc::ucs::config::Registry& registry = mc::ucs::config::Registry::instance();
  md::register_metadata_config_tables(registry);
  std::string error;
  Result<md::MetadataConfig> config = md::read_metadata_config(&error);
  if (!config.ok())
    return fail("metadata knobs: " +
                (error.empty() ? std::string(mc::ucs::status_string(config.status())) : error));
  Result<std::unique_ptr<md::Store>> store =
      md::open_store(a.metadata, md::store_options(*config), &error);
  if (!store.ok()) return fail("metadata " + quote(a.metadata) + ": " + error);
  md::Store& st = **store;
  const std::string key = md::nvmeof_key(config->key_prefix, a.segment);

  if (a.command == "register") {
    if (!a.force) {
      Result<std::string> old = st.get(key);
      if (old.ok()) return fail(key + " exists (--force replaces it)");
      if (old.status() != Status::NoElem) return fail(st.last_error());
    }
    md::FileSegmentDesc d;
    d.server_name = a.server;
    for (const std::string& f : a.files) {
      std::string why;
      Result<uint64_t> len = file_length(f, &why);
      if (!len.ok()) return fail(why);
      std::error_code ec;
      const std::filesystem::path abs = std::filesystem::absolute(f, ec);
      d.buffers.push_back({*len, ec ? f : abs.lexically_normal().string(), {}});
    }
    if (st.put(key, md::encode(d)) != Status::Ok) return fail(st.last_error());
    print_segment(key, d);
    return 0;
  }
  if (a.command == "unregister") {
    Result<std::string> old = st.get(key);
    if (!old.ok()) {
      return fail(old.status() == Status::NoElem ? "no segment " + key : st.last_error());
    }
    if (st.remove(key) != Status::Ok) return fail(st.last_error());
    std::cout << "removed " << key << "\n";
    return 0;
  }
  Result<std::string> value = st.get(key);
  if (!value.ok()) {
    return fail(value.status() == Status::NoElem ? "no segment " + key + " in " + st.url()
                                                 : st.last_error());
  }
  Result<md::FileSegmentDesc> d = md::decode_file_segment(*value, &error);
  if (!d.ok()) return fail(key + " is not a file segment: " + error);
  if (a.command == "show") {
    if (a.json) {
      std::cout << *value << "\n";
    } else {
      print_segment(key, *d);
    }
    return 0;
  }
  // mount / unmount: read, modify, write.
  if (static_cast<size_t>(a.buffer) >= d->buffers.size()) {
    return bad("--buffer " + std::to_string(a.buffer) + ": " + key + " has " +
               std::to_string(d->buffers.size()) + " buffers (0 to " +
               std::to_string(d->buffers.size() - 1) + ")");
  }
  auto& map = d->buffers[static_cast<size_t>(a.buffer)].local_path_map;
  if (a.command == "mount") {
    map[a.host] = a.path;
  } else if (map.erase(a.host) == 0) {
    return fail("buffer " + std::to_string(a.buffer) + " of " + key + " is not mounted on " +
                a.host);
  }
  if (st.put(key, md::encode(*d)) != Status::Ok) return fail(st.last_error());
  print_segment(key, *d);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (argc < 2) return bad("no command");
  a.command = argv[1];
  if (a.command == "-h" || a.command == "--help") {
    usage(std::cout);
    return 0;
  }
  if (a.command == "--version") return mc::tools::print_version("mc_nvmeof_register");
  const std::vector<std::string> commands = {"register", "mount", "unmount", "show", "unregister"};
  bool known = false;
  for (const std::string& c : commands) known = known || c == a.command;
  if (!known) return bad("unknown command " + quote(a.command));
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "-h" || arg == "--help") {
      usage(std::cout);
      return 0;
    } else if (arg == "--metadata" && has_value) {
      a.metadata = argv[++i];
    } else if (arg == "--segment" && has_value) {
      a.segment = argv[++i];
    } else if (arg == "--server" && has_value) {
      a.server = argv[++i];
    } else if (arg == "--host" && has_value) {
      a.host = argv[++i];
    } else if (arg == "--path" && has_value) {
      a.path = argv[++i];
    } else if (arg == "--buffer" && has_value) {
      const char* t = argv[++i];
      const char* end = t + std::strlen(t);
      auto r = std::from_chars(t, end, a.buffer);
      if (r.ec != std::errc() || r.ptr != end || a.buffer < 0) {
        return bad("invalid --buffer " + quote(t) + ": expected a buffer index (0, 1, ...)");
      }
    } else if (arg == "--force") {
      a.force = true;
    } else if (arg == "--json") {
      a.json = true;
    } else if (arg.rfind("--", 0) == 0) {
      return bad(has_value ? "unknown option " + quote(arg)
                           : "unknown option or missing value: " + quote(arg));
    } else if (a.command == "register") {
      a.files.push_back(arg);
    } else {
      return bad("unexpected argument " + quote(arg));
    }
  }
  if (a.metadata.empty()) return bad("--metadata is required");
  if (md::is_p2p(a.metadata)) {
    return bad(
        "P2PHANDSHAKE has no metadata store: file segments need http://, etcd:// or "
        "redis://");
  }
  if (a.segment.empty()) return bad("--segment is required");
  if (a.command == "register") {
    if (a.server.empty()) return bad("register needs --server (the host the files are on)");
    if (a.files.empty()) return bad("register needs at least one FILE");
  }
  if (a.command == "mount" || a.command == "unmount") {
    if (a.host.empty()) return bad(a.command + " needs --host");
    if (a.buffer < 0) return bad(a.command + " needs --buffer");
    if (a.command == "mount" && a.path.empty()) return bad("mount needs --path");
  }
  return run(a);
}
