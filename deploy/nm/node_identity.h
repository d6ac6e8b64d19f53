#pragma once

// Who this node is to the resource manager: the node id and secret it got at registration,
// and the digest that client tokens reading its logs are checked against.
// Shared between the heartbeat loop (which sets it) and the REST server (which checks tokens
// with the secret). Empty until the first registration succeeds.

#include <mutex>
#include <string>

namespace tide::nm {

class NodeIdentity {
 public:
  void set(std::string nodeId, std::string nodeSecret, std::string logReaderDigest = "") {
    std::lock_guard<std::mutex> lock(mutex_);
    nodeId_ = std::move(nodeId);
    nodeSecret_ = std::move(nodeSecret);
    logReaderDigest_ = std::move(logReaderDigest);
    registered_ = true;
  }
  // The RM no longer knows the node; the secret stays valid until it re-registers, so
  // containers can still be reached meanwhile.
  void markUnregistered() {
    std::lock_guard<std::mutex> lock(mutex_);
    registered_ = false;
  }
  std::string nodeId() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return nodeId_;
  }
  std::string nodeSecret() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return nodeSecret_;
  }
  // What a client token that reads this node's logs must hash to (logReaderDigestOf); empty
  // before registration or from a tide-rm that authenticates nobody.
  std::string logReaderDigest() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return logReaderDigest_;
  }
  bool registered() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return registered_;
  }

 private:
  mutable std::mutex mutex_;
  std::string nodeId_;
  std::string nodeSecret_;
  std::string logReaderDigest_;
  bool registered_ = false;
};

}  // namespace tide::nm
