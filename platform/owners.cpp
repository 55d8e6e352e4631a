// platform/files.hpp's foreign_owner: the decision of read_own_file from the owners alone, the same
// on every OS (so it is tested with owners that no single-user test machine, Wine included, has).
#include <fmt/format.h>

#include <algorithm>

#include "platform/files.hpp"

namespace ddp::platform {

std::optional<std::string> foreign_owner(const std::filesystem::path& path, const FileOwners& owners,
                                         const OwnerPolicy& policy) {
  auto admins = [&](const std::string& owner) {
    return std::find(policy.admin_owners.begin(), policy.admin_owners.end(), owner) != policy.admin_owners.end();
  };
  if (policy.me.empty())
    return fmt::format("{}: this process's own user cannot be read: not acting on it", path.string());
  if (owners.dir.empty()) {
    return fmt::format("{}: its directory's owner cannot be read: not acting on a file another user may control",
                       path.string());
  }
  if (owners.dir != policy.me && !admins(owners.dir)) {
    return fmt::format(
        "{}: its directory belongs to {}, not to this user ({}): not acting on a file another user controls",
        path.string(), owners.dir, policy.me);
  }
  if (owners.file.empty()) {
    return fmt::format("{}: its owner cannot be read: another user may have planted it", path.string());
  }
  if (owners.file != policy.me && !(policy.i_am_admin && admins(owners.file))) {
    return fmt::format("{}: owned by {}, not by this user ({}): another user may have planted it", path.string(),
                       owners.file, policy.me);
  }
  return std::nullopt;
}

}  // namespace ddp::platform
