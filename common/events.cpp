#include "common/events.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <type_traits>

#include "common/json_bytes.hpp"

namespace ddp::events {

using json = nlohmann::json;

namespace {

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

// The fields that hold paths or the run id: bytes the user chose, written as json_bytes.hpp
// writes them, so that one that is not UTF-8 round-trips instead of becoming U+FFFD. Free text (a
// worker's error, a reason) stays a string, its bad bytes replaced.
bool bytes_field(std::string_view name) {
  for (std::string_view f : {"run_id", "filestore", "run_dir", "log_dir", "cgroup", "path", "stacks_file"}) {
    if (name == f) return true;
  }
  return false;
}

template <class T>
json field_json(const char* name, const T& value) {
  if constexpr (std::is_same_v<T, std::string>) {
    if (bytes_field(name)) return bytes_to_json(value);
  }
  return json(value);
}

// Writes each field into `out`; an empty optional as null (or not at all: omit_empty).
struct Writer {
  json& out;
  template <class T>
  void operator()(const char* name, const T& value) const {
    if constexpr (IsOptional<T>::value) {
      out[name] = value ? field_json(name, *value) : json(nullptr);
    } else {
      out[name] = field_json(name, value);
    }
  }
  template <class T>
  void omit_empty(const char* name, const std::optional<T>& value) const {
    if (value) out[name] = field_json(name, *value);
  }
  template <class T>
  void added(const char* name, const T& value) const {
    (*this)(name, value);
  }
  void exit(const ExitStatus& status) const { put_exit_fields(out, status); }
};

// Reads each field from `in`; a missing or mistyped one throws, naming it. An optional may be
// missing or null.
struct Reader {
  const json& in;
  std::string_view type;

  [[noreturn]] void fail(const char* name, const std::string& why) const {
    throw ParseError(fmt::format("{} event: field \"{}\" {}", type, name, why));
  }
  template <class T>
  void read(const char* name, const json& value, T& out) const {
    try {
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        if (!value.is_number_integer()) fail(name, fmt::format("is not an integer: {}", value.dump()));
      }
      if constexpr (std::is_same_v<T, std::string>) {
        if (bytes_field(name)) {
          out = bytes_from_json(value);
          return;
        }
      }
      value.get_to(out);
    } catch (const json::exception& e) {
      fail(name, fmt::format("has the wrong type ({}): {}", e.what(), value.dump()));
    } catch (const std::invalid_argument& e) {
      fail(name, fmt::format("has the wrong type ({})", e.what()));
    }
  }
  template <class T>
  void operator()(const char* name, T& out) const {
    auto it = in.find(name);
    if constexpr (IsOptional<T>::value) {
      if (it == in.end() || it->is_null()) {
        out.reset();
        return;
      }
      read(name, *it, out.emplace());
    } else {
      if (it == in.end()) fail(name, "is missing");
      read(name, *it, out);
    }
  }
  template <class T>
  void omit_empty(const char* name, std::optional<T>& out) const {
    (*this)(name, out);
  }
  template <class T>
  void added(const char* name, T& out) const {
    if (in.contains(name)) (*this)(name, out);
  }
  void exit(ExitStatus& status) const {
    auto got = exit_from_fields(in);
    if (!got) fail("exit_code", "and \"signal\" do not say how the rank ended (an integer or a signal name)");
    status = *got;
  }
};

// The known types, in Payload order, without Unknown.
template <std::size_t I = 0>
bool read_known(std::string_view type, const json& in, Payload& out) {
  if constexpr (I + 1 < std::variant_size_v<Payload>) {
    using T = std::variant_alternative_t<I, Payload>;
    if (type == T::kType) {
      T value;
      T::fields(value, Reader{in, type});
      out = std::move(value);
      return true;
    }
    return read_known<I + 1>(type, in, out);
  }
  return false;
}

}  // namespace

std::string type_name(const Payload& payload) {
  return std::visit(
      [](const auto& e) -> std::string {
        if constexpr (std::is_same_v<std::decay_t<decltype(e)>, Unknown>) {
          return e.type;
        } else {
          return std::string(e.kType);
        }
      },
      payload);
}

json to_json(const Event& event) {
  json out = json::object();
  std::visit(
      [&](const auto& e) {
        if constexpr (std::is_same_v<std::decay_t<decltype(e)>, Unknown>) {
          if (e.fields.is_object()) out = e.fields;
        } else {
          std::decay_t<decltype(e)>::fields(e, Writer{out});
        }
      },
      event.payload);
  out["event"] = type_name(event.payload);
  out["time"] = event.time;
  out["v"] = event.version;
  return out;
}

std::string to_line(const Event& event) {
  return to_json(event).dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

Event from_json(const json& object) {
  if (!object.is_object()) throw ParseError(fmt::format("an event is a JSON object, not {}", object.dump()));
  auto type = object.find("event");
  if (type == object.end() || !type->is_string()) {
    throw ParseError(fmt::format("an event names its type in a string field \"event\": {}", object.dump()));
  }
  Event out;
  out.version = 1;  // supervisors before the contract wrote no "v"; their fields are version 1's
  if (auto v = object.find("v"); v != object.end()) {
    if (!v->is_number_integer()) throw ParseError(fmt::format("event field \"v\" is not an integer: {}", v->dump()));
    out.version = v->get<int>();
  }
  if (auto t = object.find("time"); t != object.end() && t->is_number()) out.time = t->get<double>();
  const auto name = type->get<std::string>();
  // A newer major version may mean other things by the same names: kept whole, like an unknown type.
  if (out.version > kSchemaVersion || !read_known(name, object, out.payload)) {
    json fields = object;
    for (const char* envelope : {"event", "time", "v"}) fields.erase(envelope);
    out.payload = Unknown{name, std::move(fields)};
  }
  return out;
}

Event parse_line(std::string_view line) {
  auto parsed = json::parse(line, nullptr, false);
  if (parsed.is_discarded()) {
    throw ParseError(fmt::format("not a JSON line: {}", std::string(line.substr(0, 200))));
  }
  return from_json(parsed);
}

}  // namespace ddp::events
