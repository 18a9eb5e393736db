// SPDX-License-Identifier: Apache-2.0
// The UCP configuration table and the MC_TLS alias rules.
#include "ucp/api/config.h"

namespace mc::ucp {

namespace cfg = ucs::config;

namespace {

// "off" (or 0): never; otherwise a time.
cfg::Parser<cfg::Duration> reconnect_interval_parser() {
  cfg::Parser<cfg::Duration> p = cfg::time_parser();
  cfg::Parser<cfg::Duration> time = p;
  p.syntax = "off, or " + time.syntax;
  p.parse = [time](std::string_view text, cfg::Duration* out) {
    if (cfg::to_lower(cfg::trim(text)) == "off") {
      *out = cfg::Duration::zero();
      return ucs::Status::Ok;
    }
    return time.parse(text, out);
  };
  p.format = [time](const cfg::Duration& value) {
    return value <= cfg::Duration::zero() ? std::string("off") : time.format(value);
  };
  return p;
}

// The staging fragment of each memory type: the key:value list of sizes,
// its keys the names of the memory types that can be staged.
cfg::Parser<std::map<std::string, size_t>> frag_size_parser() {
  cfg::Parser<std::map<std::string, size_t>> p =
      cfg::key_value_parser(cfg::size_parser(4096, size_t{1} << 30));
  const auto inner = p.parse;
  p.syntax += "; keys host, cuda, cuda-managed";
  p.parse = [inner](std::string_view text, std::map<std::string, size_t>* out) {
    std::map<std::string, size_t> m;
    MC_RETURN_IF_ERROR(inner(text, &m));
    std::map<std::string, size_t> lower;
    for (const auto& [key, value] : m) {
      const std::string k = cfg::to_lower(key);
      if (k != "host" && k != "cuda" && k != "cuda-managed") return ucs::Status::InvalidParam;
      if (!lower.emplace(k, value).second) return ucs::Status::InvalidParam;
    }
    *out = std::move(lower);
    return ucs::Status::Ok;
  };
  return p;
}

}  // namespace

size_t rndv_frag_size(const ContextConfig& config, uct::MemType type) {
  auto it = config.rndv_frag_size.find(uct::mem_type_name(type));
  if (it != config.rndv_frag_size.end()) return it->second;
  return type == uct::MemType::Host ? size_t{512} << 10 : size_t{4} << 20;
}

const cfg::Table& context_config_table() {
  static const cfg::Table table(
      "ucp context", "",
      {cfg::field("TLS", "all",
                  "Transports UCP may use: a list such as \"sm,tcp\", \"^tcp\" for all but those, "
                  "or \"all\"; the alias shm means sm, and net means tcp and the rc_* transports.",
                  &ContextConfig::tls, cfg::allow_list_parser()),
       cfg::field("NET_DEVICES", "all",
                  "Devices network transports may use, e.g. \"eth0,mlx5_0\" or \"^lo\".",
                  &ContextConfig::net_devices, cfg::allow_list_parser()),
       cfg::field("SHM_DEVICES", "all", "Devices shared-memory transports may use.",
                  &ContextConfig::shm_devices, cfg::allow_list_parser()),
       cfg::field("MAX_RMA_RAILS", "2",
                  "Most bandwidth lanes one endpoint spreads a large put or get over.",
                  &ContextConfig::max_rma_rails, cfg::uint_parser(1, 16)),
       cfg::field("MAX_EAGER_RAILS", "1",
                  "Most lanes one endpoint spreads the fragments of a large active message over.",
                  &ContextConfig::max_eager_rails, cfg::uint_parser(1, 16)),
       cfg::field("LOOPBACK_RAILS", "1",
                  "Most rails of a transport that goes through the kernel's loopback (tcp) to a "
                  "peer on this host in the same network namespace: every device then routes "
                  "through lo, and the transport already stripes a large transfer over several "
                  "connections, so more rails add copies and context switches, not bandwidth.",
                  &ContextConfig::loopback_rails, cfg::uint_parser(1, 16)),
       cfg::field("PROTO_INFO", "n",
                  "Log, at info level, the lanes and the protocol table chosen for each new "
                  "endpoint, with the rejected candidates and why.",
                  &ContextConfig::proto_info, cfg::bool_parser()),
       cfg::field("SLICE_SIZE", "64k",
                  "Bytes of one slice when a large transfer is cut for several lanes.",
                  &ContextConfig::slice_size, cfg::size_parser(512, size_t{1} << 30)),
       cfg::field("FRAGMENT_RATIO", "4",
                  "A last slice smaller than 1/FRAGMENT_RATIO of a slice is merged into the "
                  "one before it.",
                  &ContextConfig::fragment_ratio, cfg::uint_parser(1, 1024)),
       cfg::field("RETRY_CNT", "9",
                  "Times a slice that failed on one lane is re-issued on another before the "
                  "transfer fails.",
                  &ContextConfig::retry_cnt, cfg::uint_parser(0, 1000)),
       cfg::field("SLICES_IN_FLIGHT", "8",
                  "Most slices of one request outstanding on one lane at a time.",
                  &ContextConfig::slices_in_flight, cfg::uint_parser(1, 4096)),
       cfg::field("TRANSFER_TIMEOUT", "60s",
                  "Deadline of every request; when it passes, the request completes with "
                  "Timeout (\"inf\": never).",
                  &ContextConfig::transfer_timeout, cfg::time_parser()),
       cfg::field("BCOPY_THRESH", "auto",
                  "Size from which bcopy replaces short; auto: from the performance model.",
                  &ContextConfig::bcopy_thresh, cfg::auto_parser(cfg::size_parser())),
       cfg::field("ZCOPY_THRESH", "auto",
                  "Size from which zero-copy replaces short and bcopy; auto: from the "
                  "performance model.",
                  &ContextConfig::zcopy_thresh, cfg::auto_parser(cfg::size_parser())),
       cfg::field("RNDV_THRESH", "auto",
                  "Size from which an active message goes by rendezvous (a request-to-send, "
                  "then the receiver gets the payload zero-copy and acknowledges) instead of "
                  "eager fragments; auto: from the performance model, \"inf\": never.",
                  &ContextConfig::rndv_thresh, cfg::auto_parser(cfg::size_parser())),
       cfg::field("THREAD_MODE", "single",
                  "Threads that may use one worker: single (one at a time, no locking) or multi "
                  "(any thread; a worker mutex serialises the worker's, its endpoints' and its "
                  "requests' methods). WorkerParams overrides it per worker.",
                  &ContextConfig::thread_mode,
                  cfg::enum_parser<ThreadMode>(
                      {{"single", ThreadMode::Single}, {"multi", ThreadMode::Multi}})),
       cfg::field("POLL_INTERVAL", "1ms",
                  "Longest sleep of Worker::wait() while some iface of the worker has no event "
                  "fd (sm, self): they are polled this often. Ifaces with an event fd (tcp) wake "
                  "it at once.",
                  &ContextConfig::poll_interval, cfg::time_parser()),
       cfg::field("CONNECT_TIMEOUT", "auto",
                  "Deadline for an endpoint's lanes to connect to the peer (wireup through the "
                  "peer's address); a lane not connected by then fails with Timeout and its "
                  "operations go to the other lanes or fail. auto: each transport's own knob "
                  "(MC_TCP_CONN_TIMEOUT).",
                  &ContextConfig::connect_timeout, cfg::auto_parser(cfg::time_parser())),
       cfg::field("LANE_RECONNECT_INTERVAL", "2s",
                  "A lane that failed (its connection broke, or it could not connect when the "
                  "endpoint was created) is connected again in the background: first after "
                  "this long, then, while attempts fail, after twice as long each time, up to "
                  "8 times this; once connected, new operations use it again. \"off\": a "
                  "failed lane stays failed for the endpoint's life.",
                  &ContextConfig::lane_reconnect_interval, reconnect_interval_parser()),
       cfg::field("RNDV_FRAG_SIZE", "host:512k,cuda:4m",
                  "Bytes of one fragment of the staging protocol, per memory type of the local "
                  "buffer (host, cuda, cuda-managed; a type not listed keeps its default: host "
                  "512k, the others 4m). A put or get of memory no network lane can access "
                  "(GPU memory over tcp or sm) is staged fragment by fragment through pinned "
                  "host bounce buffers by a memory-type transport (cuda_copy) and a network "
                  "lane. Host memory is never staged today: its entry is accepted for "
                  "compatibility.",
                  &ContextConfig::rndv_frag_size, frag_size_parser()),
       cfg::field("STAGING_DEPTH", "4",
                  "Fragments of one staged put or get in flight at a time (each holds one "
                  "bounce buffer of MC_RNDV_FRAG_SIZE bytes): the copy of one overlaps the "
                  "network transfer of the others. A worker keeps that many bounce buffers "
                  "per fragment size, shared by its staged requests.",
                  &ContextConfig::staging_depth, cfg::uint_parser(1, 64)),
       cfg::field("FORCE_TCP", "n",
                  "Mooncake's knob: tcp as the transport whatever RDMA NICs exist. Means "
                  "MC_TLS=tcp, and wins over MC_TLS when both are set (a warning says so); "
                  "cannot be combined with MC_FORCE_HCA.",
                  &ContextConfig::force_tcp, cfg::bool_parser()),
       cfg::field("FORCE_HCA", "n",
                  "Mooncake's knob: RDMA as the transport. Means MC_TLS=rc_verbs,rc_mlx5 (wins "
                  "over MC_TLS, with a warning), and creating a context fails with NoDevice "
                  "when no RDMA device is usable.",
                  &ContextConfig::force_hca, cfg::bool_parser())});
  return table;
}

void register_ucp_config_tables(cfg::Registry& registry) {
  registry.add<ContextConfig>(context_config_table());
}

namespace {

// The transports an MC_TLS item names.
bool item_matches(std::string_view item, std::string_view tl_name) {
  const std::string lower = cfg::to_lower(item);
  if (lower == tl_name) return true;
  if (lower == "shm") return tl_name == "sm";
  if (lower == "net") return tl_name == "tcp" || tl_name.starts_with("rc_");
  return false;
}

}  // namespace

ucs::Result<TlsChoice> choose_tls(const ContextConfig& config, std::string* error) {
  if (config.force_tcp && config.force_hca) {
    if (error) {
      *error =
          "MC_FORCE_TCP and MC_FORCE_HCA cannot both be set (one forces tcp, the other "
          "RDMA)";
    }
    return ucs::Status::InvalidParam;
  }
  std::string tls_text;
  for (const cfg::Field& f : context_config_table().fields()) {
    if (f.name == "TLS") tls_text = f.get(&config);
  }
  TlsChoice choice;
  if (!config.force_tcp && !config.force_hca) {
    choice.tls = config.tls;
    choice.origin = "MC_TLS=" + tls_text;
    return choice;
  }
  const char* knob = config.force_tcp ? "MC_FORCE_TCP" : "MC_FORCE_HCA";
  const char* as = config.force_tcp ? "tcp" : "rc_verbs,rc_mlx5";
  choice.tls = config.force_tcp ? cfg::AllowList{false, {"tcp"}}
                                : cfg::AllowList{false, {"rc_verbs", "rc_mlx5"}};
  choice.origin = std::string(knob) + "=y (as MC_TLS=" + as + ")";
  choice.rdma_required = config.force_hca;
  if (cfg::to_lower(tls_text) != "all" && cfg::to_lower(tls_text) != as) {
    choice.note = std::string(knob) + "=y wins over MC_TLS=" + tls_text + ": transports " + as;
  }
  return choice;
}

bool tl_allowed(const cfg::AllowList& list, std::string_view tl_name) {
  bool listed = false;
  for (const std::string& item : list.items) listed = listed || item_matches(item, tl_name);
  return list.negate ? !listed : listed;
}

}  // namespace mc::ucp
