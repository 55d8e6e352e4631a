#include "common/exit_status.hpp"

#include <fmt/format.h>

#include <charconv>

#include "common/signals.hpp"
#include "platform/stack_dump.hpp"

namespace ddp {

// Linux's encoding of a wait status (glibc's WIFEXITED, WEXITSTATUS, WIFSIGNALED, WTERMSIG), spelled
// out so the function is the same pure function on every platform.
ExitStatus ExitStatus::from_wait_status(int wait_status) {
  const int low = wait_status & 0x7f;
  if (low != 0 && low != 0x7f) return killed(low);  // signalled (0x7f: stopped)
  return exited(low == 0 ? (wait_status >> 8) & 0xff : -1);
}

std::string describe_exit(const ExitStatus& status, const std::optional<std::string>& oom_evidence) {
  // Windows' 32-bit codes: an NTSTATUS (0xC0000005, an access violation) reads as itself.
  if (status.signal == 0 && status.exit_code < -255) {
    const auto code = static_cast<unsigned>(status.exit_code);
    return fmt::format("exited with code 0x{:08X}{}", code,
                       code == platform::kStackDumpCode ? " (the stack dump a hang asked for)" : "");
  }
  if (status.signal == 0) return fmt::format("exited with code {}", status.exit_code);
  if (oom_evidence)
    return fmt::format("killed by the OOM killer ({}, {})", *oom_evidence, sig::signal_name(status.signal));
  return fmt::format("killed by {}", sig::signal_name(status.signal));
}

std::string exit_predicate(const ExitStatus& status) {
  return status.signal ? "was " + describe_exit(status) : describe_exit(status);
}

void put_exit_fields(nlohmann::json& fields, const ExitStatus& status) {
  fields["exit_code"] = status.signal ? nlohmann::json(nullptr) : nlohmann::json(status.exit_code);
  fields["signal"] = status.signal ? nlohmann::json(sig::signal_name(status.signal)) : nlohmann::json(nullptr);
}

namespace {

// signal_name's spellings back to the number: "SIGKILL", and "signal 99" for one without a name.
std::optional<int> signal_of(std::string_view name) {
  constexpr std::string_view kUnnamed = "signal ";
  if (name.substr(0, kUnnamed.size()) == kUnnamed) {
    int n = 0;
    auto digits = name.substr(kUnnamed.size());
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec == std::errc() && end == digits.data() + digits.size() && n > 0) return n;
    return std::nullopt;
  }
  return sig::signal_number(name);
}

}  // namespace

std::optional<ExitStatus> exit_from_fields(const nlohmann::json& fields) {
  if (auto it = fields.find("signal"); it != fields.end() && it->is_string()) {
    if (auto signo = signal_of(it->get<std::string>())) return ExitStatus::killed(*signo);
    return std::nullopt;
  }
  if (auto it = fields.find("exit_code"); it != fields.end() && it->is_number_integer()) {
    return ExitStatus::exited(it->get<int>());
  }
  return std::nullopt;
}

}  // namespace ddp
