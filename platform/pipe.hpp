#pragma once
// A pipe for a child's output: the write end goes to the child (spawn.hpp), the read end is read on
// our Asio loop as a PipeStream. Neither end is inherited by children we start later (POSIX:
// O_CLOEXEC; Windows: not inheritable, and only the handles a spawn names are passed on). On
// Windows the read end is a named pipe opened for overlapped I/O, which Asio's stream_handle needs
// (an anonymous pipe cannot do overlapped reads); a read at the end completes with broken_pipe,
// where POSIX says eof — both mean the writers are gone.
#include <boost/asio/io_context.hpp>
#include <optional>
#include <string>

#include "platform/native_handle.hpp"

#ifdef _WIN32
#include <boost/asio/windows/stream_handle.hpp>
#else
#include <boost/asio/posix/stream_descriptor.hpp>
#endif

namespace ddp::platform {

#ifdef _WIN32
using PipeStream = boost::asio::windows::stream_handle;
#else
using PipeStream = boost::asio::posix::stream_descriptor;
#endif

struct OutputPipe {
  NativeHandle read = kNoHandle;   // ours: assign it to a PipeStream
  NativeHandle write = kNoHandle;  // the child's: close it once the child has it
};

// nullopt, with `error` saying why (out of descriptors/handles), when the OS gives no pipe.
std::optional<OutputPipe> make_output_pipe(std::string& error);

// A child's stdout and stderr pipes, both or neither (nothing left open when the second fails).
struct OutputPipes {
  OutputPipe out;
  OutputPipe err;
};
inline std::optional<OutputPipes> make_output_pipes(std::string& error) {
  auto out = make_output_pipe(error);
  if (!out) return std::nullopt;
  auto err = make_output_pipe(error);
  if (!err) {
    close_handle(out->read);
    close_handle(out->write);
    return std::nullopt;
  }
  return OutputPipes{*out, *err};
}

}  // namespace ddp::platform
