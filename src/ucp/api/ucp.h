// SPDX-License-Identifier: Apache-2.0
// Everything an application needs of UCP: include this one header.
//
//   auto ctx = mc::ucp::Context::create();            // MC_TLS, MC_SLICE_SIZE, ...
//   auto worker = mc::ucp::Worker::create(**ctx);
//   // exchange worker->address() with the peer out of band
//   auto ep = (*worker)->ep_create(peer_address);
//   auto req = (*ep)->put_nbx(buf, len, remote_addr, *rkey);
//   (*req)->wait();
#pragma once

#include "ucp/api/config.h"
#include "ucp/api/context.h"
#include "ucp/api/endpoint.h"
#include "ucp/api/mem_handle.h"
#include "ucp/api/request.h"
#include "ucp/api/rkey.h"
#include "ucp/api/worker.h"
