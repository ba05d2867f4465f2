// libFuzzer target: unmask-server's HTTP front, whole, from the wire. Each input is what one client
// sends on one connection over loopback (the first byte says whether it then closes its sending
// side or keeps reading); the front must answer with well-formed HTTP/1.1 or close, and stay up.
// Routes of every kind: a probe on the network thread, a worker echoing the body, a stream, and
// a worker that waits for its client to go.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "http_server.hpp"

namespace {

using namespace unmask_server::http;

int front_port = 0;

void start_front() {
    Limits limits;
    limits.max_connections = 64;
    limits.max_header_bytes = 2048;
    limits.max_body_bytes = 4096;
    limits.header_seconds = limits.body_seconds = 0.5;
    limits.idle_seconds = 0.2;
    limits.write_seconds = 1;
    limits.worker_threads = 2;
    static Server front("127.0.0.1", 0, {}, limits);
    front.route("GET", "/healthz", [](const Request&, Response& r, const Exchange&) { r.set_content("ok", "text/plain"); },
                true);
    front.route("POST", "/echo", [](const Request& q, Response& r, const Exchange&) {
        r.set_content(q.body, "application/octet-stream");
        r.set_header("X-Echo", q.header("X-Echo"));  // client bytes in a header: made safe by the front
    });
    front.route("GET", "/stream", [](const Request&, Response& r, const Exchange&) {
        r.stream = [](BodyWriter& w) {
            for (int i = 0; i < 3 && w.write("data: " + std::to_string(i) + "\n\n"); ++i) {
            }
        };
    });
    front.route("POST", "/gone", [](const Request&, Response& r, const Exchange& e) {
        for (int i = 0; i < 20 && !e.client_gone(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        r.set_content("done", "text/plain");
    });
    front.set_error_writer([](Response& r, const std::string& message, const char*) { r.set_content(message, "text/plain"); });
    front.run();
    front_port = front.port();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    start_front();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const bool half_close = (data[0] & 1) != 0;
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) return 0;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(front_port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval wait{0, 300000};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof wait);
    if (connect(s, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        close(s);
        return 0;
    }
    (void)send(s, data + 1, size - 1, MSG_NOSIGNAL);
    if (half_close) shutdown(s, SHUT_WR);
    std::string got;
    char buffer[4096];
    for (ssize_t n; (n = recv(s, buffer, sizeof buffer, 0)) > 0;) got.append(buffer, size_t(n));
    close(s);
    // Whatever came back is HTTP/1.1 responses (an interim 100 Continue among them).
    if (!got.empty() && got.rfind("HTTP/1.1 ", 0) != 0) __builtin_trap();
    return 0;
}
