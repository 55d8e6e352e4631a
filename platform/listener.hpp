#pragma once
// How a listening socket claims its port. POSIX: SO_REUSEADDR, so a restarted server binds a port
// whose old connections linger in TIME_WAIT (another listener still makes the bind fail). Windows:
// SO_EXCLUSIVEADDRUSE — its SO_REUSEADDR would let the bind succeed on a port another process
// listens on, and a busy port would go unnoticed; TIME_WAIT does not block a listener there.
#include <boost/asio/ip/tcp.hpp>

namespace ddp::platform {

// Call between open() and bind().
void prepare_listener(boost::asio::ip::tcp::acceptor& acceptor);

}  // namespace ddp::platform
