// SPDX-License-Identifier: Apache-2.0
// mc::TransferEngine: the public class forwards to its Impl (engine.h); no
// exception leaves it (an allocation failure becomes a negative return).
#include "mc/transfer_engine.h"

#include <new>

#include "ucp/te/engine.h"
#include "ucs/log/log.h"

namespace mc {

namespace {

template <typename Fn, typename R>
R guarded(const char* what, R on_error, Fn&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    MC_LOG(error) << "transfer engine: " << what << ": " << e.what();
  } catch (...) {
    MC_LOG(error) << "transfer engine: " << what << ": unknown exception";
  }
  return on_error;
}

}  // namespace

TransferEngine::TransferEngine() : impl_(std::make_unique<Impl>()) {}

TransferEngine::~TransferEngine() = default;

int TransferEngine::init(const std::string& conn, const std::string& local_server_name) {
  return guarded("init", -1, [&] { return impl_->init(conn, local_server_name); });
}

int TransferEngine::init(const std::string& conn, const std::string& local_server_name,
                         const std::string& ip_or_host_name, uint16_t rpc_port) {
  return guarded("init", -1, [&] {
    return impl_->init_at(conn, local_server_name, ip_or_host_name, rpc_port);
  });
}

int TransferEngine::setConfig(const std::string& name, const std::string& value) {
  return guarded("setConfig", -1, [&] { return impl_->set_config(name, value); });
}

std::vector<std::string> TransferEngine::getTransports() const {
  return guarded("getTransports", std::vector<std::string>(), [&] { return impl_->transports(); });
}

int TransferEngine::registerLocalMemory(void* addr, size_t size, const std::string& location,
                                        bool remote_accessible) {
  return guarded("registerLocalMemory", -1, [&] {
    return impl_->register_memory({{addr, size}}, location, remote_accessible);
  });
}

int TransferEngine::registerLocalMemoryBatch(const std::vector<BufferEntry>& buffers,
                                             const std::string& location) {
  return guarded("registerLocalMemoryBatch", -1,
                 [&] { return impl_->register_memory(buffers, location, true); });
}

int TransferEngine::unregisterLocalMemory(void* addr) {
  return guarded("unregisterLocalMemory", -1, [&] { return impl_->unregister_memory({addr}); });
}

int TransferEngine::unregisterLocalMemoryBatch(const std::vector<void*>& addrs) {
  return guarded("unregisterLocalMemoryBatch", -1, [&] { return impl_->unregister_memory(addrs); });
}

SegmentHandle TransferEngine::openSegment(const std::string& segment_name) {
  return guarded("openSegment", SegmentHandle{-1},
                 [&] { return impl_->open_segment(segment_name); });
}

int TransferEngine::closeSegment(SegmentHandle segment_id) {
  return guarded("closeSegment", -1, [&] { return impl_->close_segment(segment_id); });
}

int TransferEngine::getSegmentBuffers(SegmentHandle segment_id,
                                      std::vector<SegmentBufferInfo>& buffers) {
  return guarded("getSegmentBuffers", -1,
                 [&] { return impl_->segment_buffers(segment_id, buffers); });
}

int TransferEngine::getSegmentPaths(SegmentHandle segment_id, std::vector<SegmentPathInfo>& paths,
                                    const void* local_addr, uint64_t remote_addr) {
  return guarded("getSegmentPaths", -1,
                 [&] { return impl_->segment_paths(segment_id, local_addr, remote_addr, paths); });
}

BatchID TransferEngine::allocateBatchID(size_t batch_size) {
  return guarded("allocateBatchID", kInvalidBatchID,
                 [&] { return impl_->allocate_batch(batch_size); });
}

int TransferEngine::submitTransfer(BatchID batch_id, const std::vector<TransferRequest>& entries) {
  return guarded("submitTransfer", -1, [&] { return impl_->submit(batch_id, entries); });
}

int TransferEngine::getTransferStatus(BatchID batch_id, size_t task_id, TransferStatus& status) {
  return guarded("getTransferStatus", -1, [&] { return impl_->status(batch_id, task_id, status); });
}

int TransferEngine::getBatchTransferStatus(BatchID batch_id, std::vector<TransferStatus>& status) {
  return guarded("getBatchTransferStatus", -1,
                 [&] { return impl_->batch_status(batch_id, status); });
}

int TransferEngine::freeBatchID(BatchID batch_id) {
  return guarded("freeBatchID", -1, [&] { return impl_->free_batch(batch_id); });
}

int TransferEngine::submitTransferWithNotify(BatchID batch_id,
                                             const std::vector<TransferRequest>& entries,
                                             const NotifyDesc& notify) {
  return guarded("submitTransferWithNotify", -1,
                 [&] { return impl_->submit_with_notify(batch_id, entries, notify); });
}

int TransferEngine::getBatchNotifyStatus(BatchID batch_id) {
  return guarded("getBatchNotifyStatus", -1, [&] { return impl_->batch_notify_status(batch_id); });
}

int TransferEngine::sendNotifyByName(const std::string& segment_name, const NotifyDesc& notify) {
  return guarded("sendNotifyByName", -1, [&] { return impl_->send_notify(segment_name, notify); });
}

int TransferEngine::sendNotifyByID(SegmentHandle segment_id, const NotifyDesc& notify) {
  return guarded("sendNotifyByID", -1, [&] { return impl_->send_notify_to(segment_id, notify); });
}

int TransferEngine::getNotifies(std::vector<NotifyDesc>& notifies) {
  return guarded("getNotifies", -1, [&] {
    std::vector<te::TakenNotify> taken;
    const int rc = impl_->get_notifies(taken);
    notifies.clear();
    for (te::TakenNotify& n : taken) {
      notifies.push_back({std::move(n.name), std::move(n.msg)});
    }
    return rc;
  });
}

int TransferEngine::getNotifies(std::vector<ReceivedNotify>& notifies) {
  return guarded("getNotifies", -1, [&] {
    std::vector<te::TakenNotify> taken;
    const int rc = impl_->get_notifies(taken);
    notifies.clear();
    for (te::TakenNotify& n : taken) {
      notifies.push_back({std::move(n.sender), {std::move(n.name), std::move(n.msg)}});
    }
    return rc;
  });
}

int TransferEngine::warmupSegment(SegmentHandle segment_id) {
  return guarded("warmupSegment", -1, [&] { return impl_->warmup(segment_id); });
}

int TransferEngine::getNicLoadStats(std::vector<NicLoadStat>& stats) const {
  return guarded("getNicLoadStats", -1, [&] { return impl_->nic_load(stats); });
}

std::string TransferEngine::getLocalIpAndPort() const {
  return guarded("getLocalIpAndPort", std::string(), [&] { return impl_->ip_port(); });
}

size_t TransferEngine::getEndpointCount() const {
  return guarded("getEndpointCount", size_t{0}, [&] { return impl_->endpoint_count(); });
}

int TransferEngine::getEndpointStoreStats(EndpointStoreStats& stats) const {
  return guarded("getEndpointStoreStats", -1, [&] { return impl_->endpoint_store_stats(stats); });
}

}  // namespace mc
