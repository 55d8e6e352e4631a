#include "platform/listener.hpp"

namespace ddp::platform {

void prepare_listener(boost::asio::ip::tcp::acceptor& acceptor) {
  acceptor.set_option(boost::asio::ip::tcp::acceptor::reuse_address(true));
}

}  // namespace ddp::platform
