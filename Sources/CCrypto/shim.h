// OpenSSL's libcrypto: the SHA-1 of the XEP-0114 handshake, and HMAC-SHA256 for ad-hoc session ids.
#ifndef CCRYPTO_SHIM_H
#define CCRYPTO_SHIM_H
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#endif
