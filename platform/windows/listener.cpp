#include "platform/listener.hpp"

#include <winsock2.h>

#include <boost/asio/detail/socket_option.hpp>

namespace ddp::platform {

void prepare_listener(boost::asio::ip::tcp::acceptor& acceptor) {
  using exclusive_address_use = boost::asio::detail::socket_option::boolean<SOL_SOCKET, SO_EXCLUSIVEADDRUSE>;
  acceptor.set_option(exclusive_address_use(true));
}

}  // namespace ddp::platform
