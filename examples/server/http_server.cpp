#include "http_server.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "worker_pool.hpp"

namespace unmask_server::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using error_code = boost::system::error_code;

std::chrono::milliseconds duration_of(double seconds) {
    return std::chrono::milliseconds(static_cast<int64_t>(std::min(seconds, 1e9) * 1000));
}

// Header values we write never split a header: CR and LF become spaces.
std::string header_safe(std::string value) {
    for (char& c : value)
        if (c == '\r' || c == '\n' || c == '\0') c = ' ';
    return value;
}

// How a body is delimited: by its length, in chunks (a stream to an HTTP/1.1 client), or by the
// end of the connection (a stream to an HTTP/1.0 client, which cannot read chunks).
enum class Framing { length, chunked, until_close };

// The status line and headers of a response.
std::string response_head(const Response& r, bool keep_alive, Framing framing) {
    const auto reason = bhttp::obsolete_reason(bhttp::int_to_status(static_cast<unsigned>(r.status)));
    std::string head = "HTTP/1.1 " + std::to_string(r.status) + " " + std::string(reason.data(), reason.size()) + "\r\n";
    head += "Content-Type: " + header_safe(r.content_type) + "\r\n";
    if (framing == Framing::chunked) head += "Transfer-Encoding: chunked\r\n";
    if (framing == Framing::length) head += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
    head += keep_alive && framing != Framing::until_close ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
    for (const auto& [name, value] : r.headers) head += header_safe(name) + ": " + header_safe(value) + "\r\n";
    return head + "\r\n";
}

struct Route {
    std::string method, path;
    Handler handler;
    bool inline_handler = false;
};

class ConnectionBase;

}  // namespace

struct Server::State {
    explicit State(Limits l) : limits(l) {}

    asio::io_context io{1};
    tcp::acceptor acceptor{io};
    asio::steady_timer accept_retry{io};
    std::optional<asio::ssl::context> tls;
    const Limits limits;
    std::vector<Route> routes;
    AccessLogger logger;
    ErrorWriter error_writer;
    std::unique_ptr<WorkerPool> workers;
    // Keeps the network thread running until the workers are done: a worker's write waits on it.
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> keep_running;
    std::thread network;
    bool running = false, stopped = false;

    // The network thread's alone.
    std::set<std::shared_ptr<ConnectionBase>> connections;
    std::map<std::string, size_t> per_address;

    std::atomic<uint64_t> accepted{0}, refused{0}, timeouts{0}, malformed{0}, workers_busy{0}, open{0};
    std::atomic<bool> stopping{false};  // stop() began: answers in flight get `stop_grace_seconds` a write
    static constexpr double stop_grace_seconds = 2;

    void accept();
    void admit(tcp::socket socket);
    void close_idle();  // stops accepting; closes the connections that are not being answered
    void close_all();

    // An error the front answers itself, its body in the server's format.
    Response error(int status, const std::string& message, const char* code) const {
        Response r;
        r.status = status;
        r.close = true;
        if (error_writer) error_writer(r, message, code);
        else r.set_content(message, "text/plain");
        return r;
    }
};

namespace {

class ConnectionBase : public std::enable_shared_from_this<ConnectionBase>, public BodyWriter {
public:
    ConnectionBase(Server::State& server, std::string address, int port)
        : server_(server), address_(std::move(address)), port_(port) {}
    virtual void start() = 0;
    virtual void close() = 0;  // network thread
    const std::string& address() const { return address_; }
    bool client_gone() const override { return peer_closed_.load(); }
    bool answering() const { return answering_; }

protected:
    Server::State& server_;
    const std::string address_;
    const int port_;
    std::atomic<bool> peer_closed_{false};
    bool answering_ = false;  // a request has arrived and its response is not out yet (network thread)
};

template <class Stream>
class Connection final : public ConnectionBase {
public:
    template <class... Args>
    Connection(Server::State& server, std::string address, int port, tcp::socket socket, Args&&... args)
        : ConnectionBase(server, std::move(address), port),
          stream_(std::move(socket), std::forward<Args>(args)...),
          timer_(server.io) {}

    void start() override {
        if constexpr (tls) {
            arm(server_.limits.header_seconds);
            stream_.async_handshake(asio::ssl::stream_base::server, [self = self()](const error_code& ec) {
                if (ec) return self->close();
                self->wait_request();
            });
        } else {
            wait_request();
        }
    }

    void close() override {
        if (closed_) return;
        closed_ = true;
        peer_closed_ = true;
        timer_.cancel();
        error_code ignored;
        socket().close(ignored);
        auto& count = server_.per_address[address_];
        if (--count == 0) server_.per_address.erase(address_);
        --server_.open;
        server_.connections.erase(shared_from_this());
    }

    // BodyWriter: one chunk of a stream, from the handler's thread.
    bool write(std::string_view data) override {
        if (data.empty()) return !stream_failed_;
        char size[20];
        std::snprintf(size, sizeof size, "%zx\r\n", data.size());
        const std::string framed = chunked_ ? std::string(size) + std::string(data) + "\r\n" : std::string(data);
        if (!stream_failed_ && !write_from_worker(framed)) stream_failed_ = true;
        return !stream_failed_;
    }

private:
    static constexpr bool tls = std::is_same_v<Stream, asio::ssl::stream<tcp::socket>>;

    std::shared_ptr<Connection> self() { return std::static_pointer_cast<Connection>(shared_from_this()); }
    tcp::socket& socket() {
        if constexpr (tls) return stream_.next_layer();
        else return stream_;
    }

    // One deadline at a time: a missed one closes the connection, which ends every operation.
    // `missed_counts` says whether missing it is the client's fault (counted as a timeout).
    // A deadline that expired as it was cancelled still runs its handler, with success: the
    // generation tells a current deadline from one that was replaced or withdrawn.
    void arm(double seconds, bool missed_counts = true) {
        const uint64_t generation = ++deadline_generation_;
        timer_.expires_after(duration_of(seconds));
        timer_.async_wait([weak = std::weak_ptr<Connection>(self()), missed_counts, generation](const error_code& ec) {
            const auto connection = weak.lock();
            if (ec || !connection || connection->closed_ || connection->deadline_generation_ != generation) return;
            if (missed_counts) ++connection->server_.timeouts;
            connection->close();
        });
    }
    void disarm() {
        ++deadline_generation_;
        timer_.cancel();
    }

    // The next request: a kept-alive connection first waits for its first byte (idle deadline),
    // then every request has the header deadline for the rest of its headers.
    void wait_request() {
        if (closed_) return;
        if (buffer_.size() == 0 && served_ > 0) {
            if (peer_closed_) return close();
            arm(server_.limits.idle_seconds, false);
            stream_.async_read_some(buffer_.prepare(4096), [self = self()](const error_code& ec, size_t n) {
                if (ec) return self->close();
                self->buffer_.commit(n);
                self->read_header();
            });
            return;
        }
        read_header();
    }

    void read_header() {
        arm(server_.limits.header_seconds);
        parser_.emplace();
        parser_->header_limit(static_cast<std::uint32_t>(server_.limits.max_header_bytes));
        parser_->body_limit(server_.limits.max_body_bytes);
        bhttp::async_read_header(stream_, buffer_, *parser_, [self = self()](const error_code& ec, size_t) {
            if (self->closed_) return;
            if (ec) return self->refuse(ec);
            self->on_header();
        });
    }

    void on_header() {
        const auto& message = parser_->get();
        if (message.find(bhttp::field::content_encoding) != message.end()) {
            ++server_.malformed;
            return respond_inline(server_.error(415, "compressed request bodies are not accepted", "unsupported_encoding"),
                                  partial_request());
        }
        const auto expect = message[bhttp::field::expect];
        if (beast::iequals(expect, "100-continue") && message.version() >= 11 && !parser_->is_done()) {
            auto interim = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
            asio::async_write(stream_, asio::buffer(*interim), [self = self(), interim](const error_code& ec, size_t) {
                if (self->closed_) return;
                if (ec) return self->close();
                self->read_body();
            });
            return;
        }
        read_body();
    }

    void read_body() {
        arm(server_.limits.body_seconds);
        bhttp::async_read(stream_, buffer_, *parser_, [self = self()](const error_code& ec, size_t) {
            if (self->closed_) return;
            if (ec) return self->refuse(ec);
            self->disarm();
            self->dispatch();
        });
    }

    // A request that could not be read whole: answered when the fault is the request's, else
    // the connection just closes (the client went away, or a deadline closed it).
    void refuse(const error_code& ec) {
        const bool request_fault = ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category() &&
                                   ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message;
        if (closed_ || !request_fault) return close();
        ++server_.malformed;
        Response r = ec == bhttp::error::header_limit ? server_.error(431, "the request headers are larger than " +
                                                                               std::to_string(server_.limits.max_header_bytes) + " bytes",
                                                                       "headers_too_large")
                     : ec == bhttp::error::body_limit
                         ? server_.error(413, "the request body is larger than max_body_bytes (" +
                                                  std::to_string(server_.limits.max_body_bytes) + ")",
                                         "body_too_large")
                         : server_.error(400, "malformed HTTP request: " + ec.message(), "bad_request");
        respond_inline(std::move(r), partial_request());
    }

    Request partial_request() const {
        Request r;
        if (parser_ && parser_->is_header_done()) {
            const auto& m = parser_->get();
            r.method = std::string(m.method_string());
            r.target = std::string(m.target());
        }
        r.path = r.target.substr(0, r.target.find('?'));
        r.remote_addr = address_;
        r.remote_port = port_;
        return r;
    }

    void dispatch() {
        auto message = parser_->release();
        parser_.reset();
        ++served_;
        answering_ = true;
        keep_alive_ = message.keep_alive();
        http10_ = message.version() < 11;
        head_only_ = message.method() == bhttp::verb::head;
        arrived_ = Clock::now();
        Request request;
        request.method = std::string(message.method_string());
        request.target = std::string(message.target());
        request.path = request.target.substr(0, request.target.find('?'));
        for (const auto& field : message)
            request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
        request.body = std::move(message.body());
        request.remote_addr = address_;
        request.remote_port = port_;

        const Route* route = nullptr;
        bool path_known = false;
        for (const Route& r : server_.routes) {
            if (r.path != request.path) continue;
            path_known = true;
            if (r.method == request.method || (head_only_ && r.method == "GET")) route = &r;  // HEAD: GET's head
        }
        if (route == nullptr) {
            Response r = path_known ? server_.error(405, "the method " + request.method + " is not allowed on " + request.path,
                                                    "method_not_allowed")
                                    : server_.error(404, "no such endpoint: " + request.method + " " + request.path, "not_found");
            r.close = false;  // the request itself was fine
            return respond_inline(std::move(r), request);
        }
        if (route->inline_handler) {
            Response response;
            run_guarded(*route, request, response);
            return respond_inline(std::move(response), request);
        }
        Request summary;  // for the access log of a request no worker takes
        summary.method = request.method;
        summary.target = request.target;
        summary.path = request.path;
        summary.remote_addr = request.remote_addr;
        summary.remote_port = request.remote_port;
        read_ahead();
        auto task = [self = self(), route, request = std::move(request)]() mutable { self->serve(*route, request); };
        if (!server_.workers->try_post(std::move(task))) {
            ++server_.workers_busy;
            Response busy = server_.error(503, "the server is busy: every worker is taken", "server_busy");
            busy.close = false;
            if (std::none_of(busy.headers.begin(), busy.headers.end(),
                             [](const auto& h) { return beast::iequals(h.first, "Retry-After"); }))
                busy.set_header("Retry-After", "1");
            respond_inline(std::move(busy), summary);
        }
    }

    void run_guarded(const Route& route, const Request& request, Response& response) {
        std::string failure;
        try {
            route.handler(request, response, *this);
            return;
        } catch (const std::exception& e) {
            failure = e.what();
        } catch (...) {
            failure = "unknown";
        }
        response = server_.error(500, "internal error: " + failure, "internal_error");
        response.close = false;
    }

    // While a worker serves a request, the connection reads on until bytes come: a client that
    // closes is seen at once; the bytes of a pipelined request wait in the buffer for their turn.
    // Once some are there the read stops, so that a read in flight always means an empty buffer.
    void read_ahead() {
        if (reading_ahead_ || peer_closed_ || buffer_.size() > 0) return;
        reading_ahead_ = true;
        stream_.async_read_some(buffer_.prepare(4096), [self = self()](const error_code& ec, size_t n) {
            self->reading_ahead_ = false;
            if (ec) self->peer_closed_ = true;
            else self->buffer_.commit(n);
            if (self->lingering_) {
                if (ec) return self->close();
                self->buffer_.clear();
                return self->discard();
            }
            if (self->resume_) {
                self->resume_ = false;
                self->next();
            }
        });
    }

    // The response went out: the next request, or the end of the connection.
    void finished(bool keep_alive) {
        answering_ = false;
        if (closed_) return;
        if (!keep_alive || server_.stopping) return linger();
        if (reading_ahead_) {
            resume_ = true;  // the read in flight decides; a kept-alive connection waits only so long
            arm(server_.limits.idle_seconds, false);
            return;
        }
        next();
    }

    void next() {
        disarm();
        if (buffer_.size() == 0 && peer_closed_) return close();
        wait_request();
    }

    // Closes after a response that says `Connection: close`: stop sending, then read what the
    // client still sends until it closes (briefly), so that its unread bytes do not reset the
    // connection before it has read the response.
    void linger() {
        lingering_ = true;
        resume_ = false;
        arm(1, false);
        if constexpr (tls) {
            // A TLS shutdown reads and writes: not while the read-ahead is in flight.
            if (reading_ahead_) return close();
            stream_.async_shutdown([self = self()](const error_code&) { self->close(); });
        } else {
            error_code ignored;
            socket().shutdown(tcp::socket::shutdown_send, ignored);
            if (!reading_ahead_) discard();  // else the read in flight goes on discarding
        }
    }
    void discard() {
        stream_.async_read_some(buffer_.prepare(4096), [self = self()](const error_code& ec, size_t) {
            if (ec) return self->close();
            self->buffer_.clear();
            self->discard();
        });
    }

    // A response written on the network thread (probes, errors of the front).
    void respond_inline(Response response, const Request& request) {
        const bool keep = keep_alive_ && !response.close;  // (inline handlers do not stream)
        auto data = std::make_shared<std::string>(response_head(response, keep, Framing::length) +
                                                  (head_only_ ? std::string() : response.body));
        arm(server_.limits.write_seconds);
        asio::async_write(stream_, asio::buffer(*data),
                          [self = self(), data, keep, response = std::move(response), request](const error_code& ec, size_t) {
                              self->disarm();
                              if (self->server_.logger)
                                  self->server_.logger(request, response, {!ec, self->seconds_since_arrival()});
                              if (ec) return self->close();
                              self->finished(keep);
                          });
    }

    // On a worker: the handler, then its response, then the access log, on this thread.
    void serve(const Route& route, const Request& request) {
        Response response;
        run_guarded(route, request, response);
        bool keep = keep_alive_ && !response.close;
        bool delivered = false;
        if (!client_gone()) {
            if (response.stream && !head_only_) {
                stream_failed_ = false;
                chunked_ = !http10_;
                keep = keep && chunked_;
                delivered = write_from_worker(response_head(response, keep, chunked_ ? Framing::chunked : Framing::until_close));
                if (delivered) {
                    try {
                        response.stream(*this);
                    } catch (...) {
                        stream_failed_ = true;  // cut short: the client sees the connection end
                    }
                    // A client gone during the stream did not get its end, whatever was written.
                    delivered = !stream_failed_ && !client_gone() && (!chunked_ || write_from_worker("0\r\n\r\n"));
                }
                keep = keep && delivered;
            } else {
                delivered = write_from_worker(response_head(response, keep, Framing::length) +
                                              (head_only_ ? std::string() : response.body));
            }
        }
        if (server_.logger) server_.logger(request, response, {delivered, seconds_since_arrival()});
        asio::post(server_.io, [self = self(), keep = keep && delivered] { self->finished(keep); });
    }

    // Hands a write to the network thread and waits for it. A write the network thread never
    // runs (the server stopped) is a broken promise: false, like a failed one.
    bool write_from_worker(std::string data) {
        auto done = std::make_shared<std::promise<bool>>();
        auto result = done->get_future();
        auto buffer = std::make_shared<std::string>(std::move(data));
        asio::post(server_.io, [self = self(), done, buffer] {
            if (self->closed_) return done->set_value(false);
            const auto& s = self->server_;
            self->arm(s.stopping ? std::min(s.limits.write_seconds, Server::State::stop_grace_seconds) : s.limits.write_seconds);
            asio::async_write(self->stream_, asio::buffer(*buffer), [self, done, buffer](const error_code& ec, size_t) {
                self->disarm();
                if (ec) self->close();
                done->set_value(!ec);
            });
        });
        try {
            return result.get();
        } catch (const std::future_error&) {
            return false;
        }
    }

    double seconds_since_arrival() const { return std::chrono::duration<double>(Clock::now() - arrived_).count(); }

    Stream stream_;
    asio::steady_timer timer_;
    beast::flat_buffer buffer_;
    std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
    bool closed_ = false, reading_ahead_ = false, resume_ = false, lingering_ = false, keep_alive_ = true;
    std::atomic<bool> stream_failed_{false};
    bool chunked_ = true;  // the stream being written: chunks, or bytes until the connection ends
    uint64_t served_ = 0, deadline_generation_ = 0;
    bool http10_ = false, head_only_ = false;  // the request being answered: HTTP/1.0, HEAD
    Clock::time_point arrived_ = Clock::now();
};

}  // namespace

void Server::State::accept() {
    acceptor.async_accept([this](const error_code& ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
        if (ec) {  // out of descriptors, say: try again shortly rather than spin
            accept_retry.expires_after(std::chrono::milliseconds(50));
            accept_retry.async_wait([this](const error_code& e) {
                if (!e) accept();
            });
            return;
        }
        admit(std::move(socket));
        accept();
    });
}

void Server::State::admit(tcp::socket socket) {
    error_code ec;
    const auto peer = socket.remote_endpoint(ec);
    if (ec) return;
    const std::string address = peer.address().to_string();
    if (connections.size() >= limits.max_connections || per_address[address] >= limits.max_connections_per_address) {
        if (per_address[address] == 0) per_address.erase(address);
        ++refused;
        socket.close(ec);
        return;
    }
    socket.set_option(tcp::no_delay(true), ec);
    std::shared_ptr<ConnectionBase> connection;
    if (tls)
        connection = std::make_shared<Connection<asio::ssl::stream<tcp::socket>>>(*this, address, peer.port(),
                                                                                  std::move(socket), *tls);
    else
        connection = std::make_shared<Connection<tcp::socket>>(*this, address, peer.port(), std::move(socket));
    ++per_address[address];
    ++accepted;
    ++open;
    connections.insert(connection);
    connection->start();
}

void Server::State::close_idle() {
    error_code ignored;
    acceptor.close(ignored);
    accept_retry.cancel();
    const auto all = connections;  // close() erases
    for (const auto& c : all)
        if (!c->answering()) c->close();
}

void Server::State::close_all() {
    error_code ignored;
    acceptor.close(ignored);
    accept_retry.cancel();
    const auto all = connections;  // close() erases
    for (const auto& c : all) c->close();
}

std::string Request::header(std::string_view name) const {
    for (const auto& [n, v] : headers)
        if (beast::iequals(n, beast::string_view(name.data(), name.size()))) return v;
    return {};
}

bool Request::has_header(std::string_view name) const {
    for (const auto& [n, v] : headers)
        if (beast::iequals(n, beast::string_view(name.data(), name.size()))) return true;
    return false;
}

Server::Server(const std::string& host, int port, const TlsFiles& tls, Limits limits)
    : state_(std::make_shared<State>(limits)) {
    // Every connection is a descriptor: allow as many as the system lets this process have.
    if (rlimit files{}; getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
        files.rlim_cur = files.rlim_max;
        setrlimit(RLIMIT_NOFILE, &files);
    }
    if (!tls.certificate.empty()) {
        try {
            asio::ssl::context context(asio::ssl::context::tls_server);
            context.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                                asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                                asio::ssl::context::no_tlsv1_1);
            context.use_certificate_chain_file(tls.certificate);
            context.use_private_key_file(tls.private_key, asio::ssl::context::pem);
            state_->tls.emplace(std::move(context));
        } catch (const boost::system::system_error& e) {
            throw std::runtime_error("cannot use the TLS certificate '" + tls.certificate + "' and key '" +
                                     tls.private_key + "': " + e.what());
        }
    }
    try {
        const tcp::endpoint endpoint(asio::ip::make_address(host), static_cast<unsigned short>(port));
        auto& acceptor = state_->acceptor;
        acceptor.open(endpoint.protocol());
        acceptor.set_option(tcp::acceptor::reuse_address(true));
        acceptor.bind(endpoint);
        acceptor.listen(asio::socket_base::max_listen_connections);
    } catch (const boost::system::system_error& e) {
        throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port) + ": " + e.what());
    }
}

Server::~Server() { stop(); }

int Server::port() const { return state_->acceptor.local_endpoint().port(); }

void Server::route(std::string method, std::string path, Handler handler, bool inline_handler) {
    state_->routes.push_back({std::move(method), std::move(path), std::move(handler), inline_handler});
}

void Server::set_access_logger(AccessLogger logger) { state_->logger = std::move(logger); }
void Server::set_error_writer(ErrorWriter writer) { state_->error_writer = std::move(writer); }

void Server::run() {
    State& s = *state_;
    if (s.running) return;
    s.running = true;
    s.workers = std::make_unique<WorkerPool>(s.limits.worker_threads);
    s.keep_running.emplace(s.io.get_executor());
    s.accept();
    s.network = std::thread([&s] { s.io.run(); });
}

void Server::stop() {
    State& s = *state_;
    if (!s.running || s.stopped) return;
    s.stopped = true;
    // No new connection nor request; the requests being answered finish, each write within the
    // grace (the network thread runs until the workers are done: their writes wait on it); then
    // whatever is left closes.
    s.stopping = true;
    asio::post(s.io, [&s] { s.close_idle(); });
    s.workers->stop();
    asio::post(s.io, [&s] { s.close_all(); });
    s.keep_running.reset();
    s.io.stop();
    s.network.join();
}

FrontStats Server::stats() const {
    const State& s = *state_;
    FrontStats out;
    out.connections_open = s.open;
    out.connections_accepted = s.accepted;
    out.connections_refused = s.refused;
    out.timeouts = s.timeouts;
    out.malformed = s.malformed;
    out.workers_busy = s.workers_busy;
    return out;
}

}  // namespace unmask_server::http
