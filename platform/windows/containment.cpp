// platform/containment.hpp on Windows: each worker's Job Object (spawn.hpp) is the containment;
// there is no guardian to start, tell or wait for.
#include "platform/containment.hpp"

namespace ddp::platform {

Containment Containment::start(std::function<void()>) { return Containment(); }
Containment::Containment(Containment&&) noexcept = default;
Containment& Containment::operator=(Containment&&) noexcept = default;
Containment::~Containment() = default;
void Containment::watch(pid_t) {}
void Containment::forget(pid_t) {}
void Containment::remove_on_death(const std::filesystem::path&) {}
void Containment::finish() {}
void Containment::send(char, pid_t) {}

}  // namespace ddp::platform
