// platform/proc.hpp's open_files and files.hpp's foreign_owner: the same on Linux and Windows (under
// Wine, open_files runs Windows' handle-table path itself: Wine keeps the table, unlike the Restart
// Manager, a stub there).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include "platform/files.hpp"
#include "platform/proc.hpp"
#include "platform/signal_numbers.hpp"
#include "test_child.hpp"

using namespace ddp;
namespace fs = std::filesystem;

TEST_CASE("open_files: the file another process holds open, by its path") {
  // Issue 25 item 1 on Windows: open_files was always empty there, so a FileStore only a rank's own
  // code names was never found.
  const auto dir = platform::make_unique_directory(fs::temp_directory_path(), "ddp-open-files-");
  const auto file = dir / "store";
  std::ofstream(file) << "x";
  auto holder = spawn_process(test::child_request({"hold", file.string(), "60000"}));
  REQUIRE(holder.ok());
  bool found = false;
  for (int i = 0; i < 100 && !found; ++i) {
    for (const auto& f : proc::open_files(holder.child.pid())) {
      std::error_code ec;
      if (fs::equivalent(f, file, ec)) found = true;
    }
    if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(found);
  holder.child.signal_group(sig::kKill);
  CHECK(test::wait_exit(holder.child, std::chrono::seconds(10)));
  CHECK(proc::open_files(holder.child.pid()).empty());  // gone: nothing
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_CASE("foreign_owner: the file and its directory must be this user's (or the administrator's own)") {
  // Issue 25, 3.1 (Windows: SIDs): decided from injected owners, which a one-user machine (Wine
  // runs everything as one user) cannot produce.
  const fs::path p = "rec.json";
  platform::OwnerPolicy me{"S-1-5-21-1-1001", {"S-1-5-32-544", "S-1-5-18"}, false};
  using O = platform::FileOwners;
  CHECK_FALSE(platform::foreign_owner(p, O{"S-1-5-21-1-1001", "S-1-5-21-1-1001"}, me));
  CHECK_FALSE(platform::foreign_owner(p, O{"S-1-5-21-1-1001", "S-1-5-18"}, me));      // C:\Windows\Temp
  CHECK_FALSE(platform::foreign_owner(p, O{"S-1-5-21-1-1001", "S-1-5-32-544"}, me));  // an admin's directory
  auto other = platform::foreign_owner(p, O{"S-1-5-21-1-1002", "S-1-5-21-1-1001"}, me);
  REQUIRE(other);
  CHECK(other->find("owned by S-1-5-21-1-1002") != std::string::npos);
  auto dir = platform::foreign_owner(p, O{"S-1-5-21-1-1001", "S-1-5-21-1-1002"}, me);
  REQUIRE(dir);
  CHECK(dir->find("its directory belongs to S-1-5-21-1-1002") != std::string::npos);
  // An Administrators-owned record is an elevated process's: its own only to a member of Administrators.
  CHECK(platform::foreign_owner(p, O{"S-1-5-32-544", "S-1-5-21-1-1001"}, me));
  auto admin = me;
  admin.i_am_admin = true;
  CHECK_FALSE(platform::foreign_owner(p, O{"S-1-5-32-544", "S-1-5-21-1-1001"}, admin));
  CHECK(platform::foreign_owner(p, O{"S-1-5-21-1-1002", "S-1-5-21-1-1001"}, admin));  // another user's, even so
  // An owner that cannot be read is never trusted.
  CHECK(platform::foreign_owner(p, O{"", "S-1-5-21-1-1001"}, me));
  CHECK(platform::foreign_owner(p, O{"S-1-5-21-1-1001", ""}, me));
  CHECK(platform::foreign_owner(p, O{"S-1-5-21-1-1001", "S-1-5-21-1-1001"}, platform::OwnerPolicy{}));
}

TEST_CASE("read_own_file: this user's own record in this user's directory is read") {
  const auto dir = platform::make_unique_directory(fs::temp_directory_path(), "ddp-own-file-");
  std::ofstream(dir / "rec.json") << "{}";
  auto text = platform::read_own_file(dir / "rec.json");
  REQUIRE(text);
  CHECK(*text == "{}");
  CHECK_FALSE(platform::read_own_file(dir / "absent"));
  std::error_code ec;
  fs::remove_all(dir, ec);
}
