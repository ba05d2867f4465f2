// An event-driven HTTP/1.1 front (Boost.Beast on Asio, one network thread) that slow or hostile
// clients cannot starve. Connections cost no thread while they send or wait: every phase has its
// own deadline (a TLS handshake and a request's headers, its body, a kept-alive connection's idle
// wait, each write), connections are bounded in all and per client address, and a request runs
// on a worker thread only once it has arrived whole. Pipelined requests are answered in order;
// `Connection: close` is honoured; a malformed request (conflicting or invalid Content-Length,
// oversized headers or body, a bad chunk) is answered 400/413/431 at once and the connection
// closed. Probes (routes marked `inline`) run on the network thread, so a pool of busy workers
// never delays them. A stream is chunked for HTTP/1.1 clients and ends with the connection for
// HTTP/1.0 ones.
//
// Why not cpp-httplib: it holds a thread per connection for as long as the client keeps it open
// or trickles bytes, so any number of slow clients above its pool makes the server unreachable,
// and it has no deadline for a whole request.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace unmask_server::http {

struct Limits {
    size_t max_connections = 1024;              // open at once; a connection beyond is closed at once
    size_t max_connections_per_address = 64;
    size_t max_header_bytes = 16 * 1024;        // request line and headers; beyond: 431
    uint64_t max_body_bytes = 1 << 20;          // beyond: 413 (Content-Length or chunked)
    double header_seconds = 10;                 // a TLS handshake, or a request's first byte to its last header
    double body_seconds = 30;                   // the end of the headers to the end of the body
    double idle_seconds = 5;                    // a kept-alive connection waiting for its next request
    double write_seconds = 10;                  // one write: a response, or one chunk of a stream
    size_t worker_threads = 16;                 // handlers that may block; as many more may queue, then 503
};

struct Request {
    std::string method, target, path;  // path: the target without its query
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    std::string remote_addr;
    int remote_port = 0;
    // The first value of a header (names compare case-insensitively), "" when absent.
    std::string header(std::string_view name) const;
    bool has_header(std::string_view name) const;
};

// What a handler sees of its connection while it runs.
class Exchange {
public:
    virtual ~Exchange() = default;
    // True once the client has closed its side or the connection failed: nobody will read the
    // answer (a client that half-closes after its request is taken as gone, as nginx takes it).
    virtual bool client_gone() const = 0;
};

// A streamed body, written chunk by chunk from the handler's thread.
class BodyWriter : public Exchange {
public:
    // Blocks until the chunk is written; false when the client is gone or the write timed out.
    virtual bool write(std::string_view data) = 0;
};

struct Response {
    int status = 200;
    std::vector<std::pair<std::string, std::string>> headers;  // CR and LF in values are replaced
    std::string content_type = "application/json", body;
    bool close = false;  // Connection: close after this response
    // When set, the body is sent chunked, as this writes it, on the handler's thread.
    std::function<void(BodyWriter&)> stream;

    void set_header(std::string name, std::string value) { headers.emplace_back(std::move(name), std::move(value)); }
    void set_content(std::string text, std::string type) {
        body = std::move(text);
        content_type = std::move(type);
    }
};

// How a response went: `delivered` when all of it was written (a stream: to its end).
struct Delivery {
    bool delivered = false;
    double seconds = 0;  // the end of the request's arrival to the end of the response
};

// Counters of the front, for /metrics and the tests.
struct FrontStats {
    uint64_t connections_open = 0, connections_accepted = 0, connections_refused = 0;
    uint64_t timeouts = 0;         // connections closed for a missed deadline
    uint64_t malformed = 0;        // requests answered 400/413/431 by the front
    uint64_t workers_busy = 0;     // requests answered 503 for want of a worker
};

using Handler = std::function<void(const Request&, Response&, const Exchange&)>;
// Called once per answered request, on the thread that ran its handler, after the response.
using AccessLogger = std::function<void(const Request&, const Response&, const Delivery&)>;
// Fills in the body of an error the front answers itself (400, 413, 431, 503, 404).
using ErrorWriter = std::function<void(Response& response, const std::string& message, const char* code)>;

struct TlsFiles {
    std::string certificate, private_key;  // both or neither
};

class Server {
public:
    // Binds host:port (0: any free port); throws std::runtime_error when it cannot, or when the TLS
    // files cannot be used. Serves nothing until run().
    Server(const std::string& host, int port, const TlsFiles& tls, Limits limits);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    int port() const;
    // Routes, before run(): exact paths. `inline_handler` runs on the network thread: it must not
    // block, nor stream. An unknown path is 404, a known path with another method 405; HEAD is
    // answered as GET without the body. Handlers must not call stop().
    void route(std::string method, std::string path, Handler handler, bool inline_handler = false);
    void set_access_logger(AccessLogger logger);
    void set_error_writer(ErrorWriter writer);

    // Starts the network thread and the workers; returns at once.
    void run();
    // Stops accepting and closes the connections waiting for a request; the requests being
    // answered finish (each write within 2 s from now on), then every connection closes and the
    // threads end. Idempotent.
    void stop();
    FrontStats stats() const;

    struct State;

private:
    std::shared_ptr<State> state_;
};

}  // namespace unmask_server::http
