#pragma once

// The staging directory of one application: where its AM keeps the recovery journal and the
// address file its executors look for, under am.stagingDir, which all of a user's clusters share.
// Application ids are unique within a cluster but not across clusters (two resource managers,
// or Slurm and tide-rm, may hand out one id), so the directory carries an owner file naming the
// application by a fingerprint of its secret (the same for every attempt; a hash that grants
// nothing). The first attempt claims <root>/<application id>; when another application holds it,
// <root>/<application id>-<fingerprint>, which every later attempt finds the same way. A
// directory without an owner file (of a tide that wrote none) goes to whoever claims it first.
// The directory must be a real one of this user (not a symlink, not another user's), and the root
// this user's or root's (/tmp will do): another user could otherwise read or swap the journal.

#include <optional>
#include <string>

namespace tide::am {

struct StagingClaim {
  std::optional<std::string> directory;  // nullopt: none could be claimed
  std::string note;  // for the log: why not, or that the usual one belongs to another application
};

// The fingerprint an application's owner file holds.
std::string stagingOwnerOf(const std::string& appSecret);

// Claims (or finds again) the staging directory of `applicationId` under `root`, creating it
// with mode 0700. Never throws: a directory that cannot be made is skipped, and said in `note`.
StagingClaim claimStagingDirectory(const std::string& root, const std::string& applicationId,
                                   const std::string& appSecret);

}  // namespace tide::am
