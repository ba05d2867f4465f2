#include "connection_probe.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>
#include <string>

namespace unmask_server {
namespace {

bool address_matches(const sockaddr_storage& address, const std::string& host, int port) {
    char text[INET6_ADDRSTRLEN] = {};
    int actual_port = -1;
    if (address.ss_family == AF_INET) {
        const auto& a = reinterpret_cast<const sockaddr_in&>(address);
        inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
        actual_port = ntohs(a.sin_port);
    } else if (address.ss_family == AF_INET6) {
        const auto& a = reinterpret_cast<const sockaddr_in6&>(address);
        inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof text);
        actual_port = ntohs(a.sin6_port);
    } else {
        return false;
    }
    return actual_port == port && host == text;
}

int find_socket(const httplib::Request& request) {
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
    if (request.ssl != nullptr) return SSL_get_fd(request.ssl);
#endif
    DIR* directory = opendir("/proc/self/fd");
    if (directory == nullptr) return -1;
    int found = -1;
    while (const dirent* entry = readdir(directory)) {
        char* end = nullptr;
        const long fd = std::strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0') continue;
        sockaddr_storage local{}, peer{};
        socklen_t local_size = sizeof local, peer_size = sizeof peer;
        if (getsockname(int(fd), reinterpret_cast<sockaddr*>(&local), &local_size) != 0 ||
            getpeername(int(fd), reinterpret_cast<sockaddr*>(&peer), &peer_size) != 0)
            continue;
        if (address_matches(local, request.local_addr, request.local_port) &&
            address_matches(peer, request.remote_addr, request.remote_port)) {
            found = int(fd);
            break;
        }
    }
    closedir(directory);
    return found;
}

}  // namespace

ConnectionProbe::ConnectionProbe(const httplib::Request& request) : socket_(find_socket(request)) {}

bool ConnectionProbe::alive() const {
    if (socket_ < 0) return true;
    pollfd p{socket_, POLLRDHUP, 0};
    if (poll(&p, 1, 0) <= 0) return true;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) == 0;
}

}  // namespace unmask_server
