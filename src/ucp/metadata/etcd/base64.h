// SPDX-License-Identifier: Apache-2.0
// Base64 (RFC 4648, standard alphabet, padded): etcd's JSON gateway carries
// keys and values as bytes in it.
#pragma once

#include <string>
#include <string_view>

namespace mc::metadata::etcd {

std::string base64_encode(std::string_view in);

/// Strict decoding: length a multiple of 4, padding only at the end. False
/// with `*error` saying what is wrong.
bool base64_decode(std::string_view in, std::string* out, std::string* error);

}  // namespace mc::metadata::etcd
