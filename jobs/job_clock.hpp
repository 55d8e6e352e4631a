#pragma once
// The wall clock the job lifecycle reads (submit, start and end times, a retry's due time that
// survives a daemon restart): the system's in the daemon, a fake one in tests.
#include "common/clock.hpp"

namespace ddp::jobs {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double now() const = 0;  // seconds since the Unix epoch
};

class SystemClock : public Clock {
 public:
  double now() const override { return now_seconds(); }
};

}  // namespace ddp::jobs
