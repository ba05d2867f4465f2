// An HTTP error as the OpenAI API reports it: a status and a JSON body
// {"error": {"message", "type", "param", "code"}}.
#pragma once

#include <stdexcept>
#include <string>

namespace unmask_server {

struct ApiError : std::runtime_error {
    ApiError(int http_status, const std::string& message, std::string field = {}, std::string reason = {})
        : std::runtime_error(message), status(http_status), param(std::move(field)), code(std::move(reason)) {}

    int status;          // 400, 401, 404, 413, 429, 500, 503, 504
    std::string param;   // the request field at fault; "" for none
    std::string code;    // a machine-readable reason, e.g. "rate_limit_exceeded"; "" for none
    double retry_after_seconds = 0;  // > 0: sent as Retry-After (429, 503)
};

// 400 naming the field.
inline ApiError invalid_field(const std::string& field, const std::string& message) {
    return ApiError(400, "'" + field + "' " + message, field, "invalid_value");
}

// The body of an error response.
std::string error_body(const ApiError& error);

}  // namespace unmask_server
