// SPDX-License-Identifier: Apache-2.0
// The tcp transport's configuration table.
#include "uct/tcp/tcp_config.h"

#include <charconv>
#include <string>

namespace mc::uct::tcp {

namespace {

bool parse_port(std::string_view text, uint16_t* out) {
  text = ucs::config::trim(text);
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value > 65535) return false;
  *out = static_cast<uint16_t>(value);
  return true;
}

}  // namespace

ucs::config::Parser<PortRange> port_range_parser() {
  ucs::config::Parser<PortRange> p;
  p.syntax = "0 (any free port), a port, or a range <first>-<last> of ports in [1, 65535]";
  p.parse = [](std::string_view text, PortRange* out) {
    PortRange r;
    const size_t dash = text.find('-');
    if (dash == std::string_view::npos) {
      if (!parse_port(text, &r.first)) return ucs::Status::InvalidParam;
      r.last = r.first;
    } else if (!parse_port(text.substr(0, dash), &r.first) ||
               !parse_port(text.substr(dash + 1), &r.last) || r.first == 0 || r.last < r.first) {
      return ucs::Status::InvalidParam;
    }
    *out = r;
    return ucs::Status::Ok;
  };
  p.format = [](const PortRange& r) {
    if (r.first == r.last) return std::to_string(r.first);
    return std::to_string(r.first) + "-" + std::to_string(r.last);
  };
  return p;
}

const ucs::config::Table& tcp_config_table() {
  using ucs::config::field;
  static const ucs::config::Table table(
      "tcp transport", "TCP_",
      {field("DEVICES", "all",
             "Network devices to use: those that are up and have an IPv4 address, filtered by "
             "this list (e.g. \"lo,eth0\" or \"^docker0\").",
             &TcpConfig::devices, ucs::config::allow_list_parser()),
       field("CONNS", "2",
             "TCP connections opened per endpoint; large puts and gets are split across them.",
             &TcpConfig::conns, ucs::config::uint_parser(1, 16)),
       field("STRIPE_THRESH", "64k",
             "Puts and gets larger than this are split across all connections of an endpoint.",
             &TcpConfig::stripe_thresh, ucs::config::size_parser(1, size_t{1} << 40)),
       field("SEG_SIZE", "64k",
             "Size of a bcopy bounce buffer: the largest bcopy put, get or active message, and "
             "the largest active message of any kind.",
             &TcpConfig::seg_size, ucs::config::size_parser(512, 16u << 20)),
       field("MAX_OUTSTANDING", "256",
             "Operations an endpoint may have in flight before new ones return NoResource.",
             &TcpConfig::max_outstanding, ucs::config::uint_parser(1, 1u << 20)),
       field("AM_QUEUE_LEN", "1024",
             "Active messages received and not yet delivered by progress() before the iface "
             "stops reading the connections that bring more; TCP flow control then makes the "
             "senders' operations return NoResource.",
             &TcpConfig::am_queue_len, ucs::config::uint_parser(1, 1u << 24)),
       field("SNDBUF", "auto",
             "Socket send buffer size (SO_SNDBUF); auto or 0 keeps the kernel default.",
             &TcpConfig::sndbuf, ucs::config::auto_parser(ucs::config::size_parser(0, 1u << 30))),
       field("RCVBUF", "auto",
             "Socket receive buffer size (SO_RCVBUF); auto or 0 keeps the kernel default.",
             &TcpConfig::rcvbuf, ucs::config::auto_parser(ucs::config::size_parser(0, 1u << 30))),
       field("NODELAY", "y", "Disable Nagle's algorithm (TCP_NODELAY) on every connection.",
             &TcpConfig::nodelay, ucs::config::bool_parser()),
       field("KEEPALIVE", "y",
             "Enable TCP keepalive probes, so a peer whose host vanished is detected.",
             &TcpConfig::keepalive, ucs::config::bool_parser()),
       field("KEEPIDLE", "10s", "Idle time before the first keepalive probe (TCP_KEEPIDLE).",
             &TcpConfig::keepidle, ucs::config::time_parser()),
       field("KEEPINTVL", "2s", "Time between keepalive probes (TCP_KEEPINTVL).",
             &TcpConfig::keepintvl, ucs::config::time_parser()),
       field("KEEPCNT", "5",
             "Unanswered keepalive probes before the connection is declared dead (TCP_KEEPCNT).",
             &TcpConfig::keepcnt, ucs::config::uint_parser(1, 127)),
       field("USER_TIMEOUT", "auto",
             "TCP_USER_TIMEOUT: sent data unacknowledged this long fails the connection (also a "
             "peer that advertises a zero window this long, i.e. does not read); auto keeps the "
             "kernel's retransmission limit of many minutes.",
             &TcpConfig::user_timeout, ucs::config::auto_parser(ucs::config::time_parser())),
       field("CONN_TIMEOUT", "10s",
             "Time allowed to establish the connections of an endpoint; past it, the endpoint "
             "fails with Timeout.",
             &TcpConfig::conn_timeout, ucs::config::time_parser()),
       field("PORT_RANGE", "0",
             "Ports an iface may listen on: 0 for any free port, or a range first-last.",
             &TcpConfig::port_range, port_range_parser()),
       field("LISTEN_BACKLOG", "256", "Backlog of the listening socket of each iface.",
             &TcpConfig::listen_backlog, ucs::config::uint_parser(1, 65535)),
       field("ACCEPT_TIMEOUT", "10s",
             "Time an accepted connection has to send its hello (the first frame of every "
             "connection); one still silent then is closed and logged.",
             &TcpConfig::accept_timeout, ucs::config::time_parser()),
       field("MAX_PENDING_ACCEPTS", "128",
             "Accepted connections of an iface that have not sent their hello yet; one more "
             "closes the oldest, so that silent peers cannot hold descriptors without bound.",
             &TcpConfig::max_pending_accepts, ucs::config::uint_parser(1, 1u << 20))});
  return table;
}

}  // namespace mc::uct::tcp
