// Tells whether the client of a request is still connected, so that a request whose client has
// gone is cancelled rather than computed for nobody. cpp-httplib 0.11 (Debian 12) does not hand
// its socket to handlers, so the probe finds it by the connection's address pair (or through
// the TLS session) while the handler runs, when the socket is certain to be open.
#pragma once

#include <httplib.h>

namespace unmask_server {

class ConnectionProbe {
public:
    explicit ConnectionProbe(const httplib::Request& request);
    // False once the peer has closed or reset the connection; true when it cannot be told.
    bool alive() const;

private:
    int socket_ = -1;
};

}  // namespace unmask_server
